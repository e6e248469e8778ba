"""The API reference at /api/v1/docs: the OpenAPI document read as one server-rendered page.

Swagger UI failed WCAG 2.1 AA (low-contrast text, links inside buttons, no page language), and
no theme fixes its markup. This page has no script: every operation with its parameters, body
and responses, then every schema with its fields and bounds, linked to each other. The JSON
document (/api/v1/openapi.json) stays the contract that clients generate from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja.openapi.docs import DocsBase

if TYPE_CHECKING:
    from ninja import NinjaAPI

METHODS = ("get", "post", "put", "patch", "delete")
# The bounds a schema may carry, in the words the page shows them with.
BOUNDS = (
    ("minimum", "at least"),
    ("maximum", "at most"),
    ("minLength", "length at least"),
    ("maxLength", "length at most"),
    ("minItems", "items at least"),
    ("maxItems", "items at most"),
    ("pattern", "matches"),
    ("default", "default"),
)
REF_PREFIX = "#/components/schemas/"


def type_of(schema: dict[str, Any]) -> dict[str, Any]:
    """Describe a schema's type: its words and, for a named schema, the anchor it links to."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF_PREFIX)
        return {"text": name, "ref": name}
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            parts = [type_of(part) for part in schema[key]]
            if len(parts) == 1:
                return parts[0]
            joined = " or ".join(part["text"] for part in parts)
            refs = [part["ref"] for part in parts if part.get("ref")]
            return {"text": joined, "ref": refs[0] if len(refs) == 1 else None}
    if schema.get("type") == "array":
        inner = type_of(schema.get("items", {}))
        return {"text": f"array of {inner['text']}", "ref": inner.get("ref")}
    if "enum" in schema:
        return {"text": "one of " + ", ".join(str(value) for value in schema["enum"])}
    text = schema.get("type", "any")
    if "format" in schema:
        text = f"{text} ({schema['format']})"
    return {"text": text}


def bounds_of(schema: dict[str, Any]) -> list[str]:
    """Return the schema's bounds as short phrases ("length at most 500")."""
    return [f"{words} {schema[key]}" for key, words in BOUNDS if key in schema]


def body_of(content: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Return each media type of a request or response body with its schema's type."""
    return [
        {"media": media, "type": type_of(body.get("schema", {}))}
        for media, body in (content or {}).items()
    ]


def operations_of(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Return every operation of the document in path order, ready for the template."""
    found = []
    for path, item in schema.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            found.append(
                {
                    "id": operation.get("operationId") or f"{method}-{path}",
                    "method": method.upper(),
                    "path": path,
                    "summary": operation.get("summary", ""),
                    "description": operation.get("description", ""),
                    "secured": bool(operation.get("security")),
                    "parameters": [
                        {
                            "name": parameter["name"],
                            "in": parameter.get("in", ""),
                            "required": parameter.get("required", False),
                            "type": type_of(parameter.get("schema", {})),
                            "bounds": bounds_of(parameter.get("schema", {})),
                            "description": parameter.get("description", ""),
                        }
                        for parameter in operation.get("parameters", [])
                    ],
                    "body": body_of(operation.get("requestBody", {}).get("content")),
                    "responses": [
                        {
                            "status": status,
                            "description": response.get("description", ""),
                            "body": body_of(response.get("content")),
                        }
                        for status, response in sorted(operation.get("responses", {}).items())
                    ],
                }
            )
    return found


def schemas_of(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Return every named schema with its fields, types, bounds and descriptions."""
    found = []
    for name, body in sorted(schema.get("components", {}).get("schemas", {}).items()):
        required = set(body.get("required", []))
        found.append(
            {
                "name": name,
                "description": body.get("description", ""),
                "type": None if "properties" in body else type_of(body),
                "fields": [
                    {
                        "name": field,
                        "required": field in required,
                        "type": type_of(spec),
                        "bounds": bounds_of(spec),
                        "description": spec.get("description", ""),
                    }
                    for field, spec in body.get("properties", {}).items()
                ],
            }
        )
    return found


class ReadableDocs(DocsBase):
    """Render the API's OpenAPI document as an accessible HTML reference."""

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        schema = api.get_openapi_schema(path_params=kwargs)
        context = {
            "info": schema.get("info", {}),
            "openapi_url": self.get_openapi_url(api, kwargs),
            "operations": operations_of(schema),
            "schemas": schemas_of(schema),
        }
        return render(request, "api/docs.html", context, using="django")
