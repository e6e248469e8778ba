"""bin/ensure-tools: nginx, systemd-analyze and pgbouncer found, else installed, else one message.

The script runs with a PATH of its own: a folder holding only the programs it needs (bash's
helpers, and nginx or systemd-analyze where a test wants them found). apt-get is a stand-in
that records what it was asked and, if told to, drops a fake nginx on that PATH; the policy
file that keeps the package from starting nginx is written to a scratch path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bin" / "ensure-tools"
HELPERS = ("dirname", "chmod", "rm", "cat", "tail")


def executable(path: Path, body: str = "exit 0") -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, object]:
    """A PATH with the helpers, systemd-analyze and pgbouncer, but no nginx; a recording
    apt-get."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in HELPERS:
        os.symlink(shutil.which(name), bin_dir / name)
    executable(bin_dir / "systemd-analyze")
    executable(bin_dir / "pgbouncer")
    # Root, as on CI and a fresh machine of this kind, whoever runs the test.
    executable(bin_dir / "id", "echo 0")
    log = tmp_path / "apt.log"
    policy = tmp_path / "policy-rc.d"
    env = {
        "PATH": str(bin_dir),
        "TOOLS_SBIN": "",  # not this machine's /usr/sbin
        "HOME": str(tmp_path),
        "POLICY_RC_D": str(policy),
        "APT_GET": str(
            executable(
                tmp_path / "apt-get",
                # Record the call, and whether the policy refused service starts meanwhile.
                f'echo "$* policy=$(cat {policy} 2>/dev/null | tail -n 1)" >> {log}\n'
                f'case "$*" in *install*) for p in nginx pgbouncer; do '
                f'printf "#!/bin/sh\\n" > {bin_dir}/$p; chmod +x {bin_dir}/$p; done;; esac',
            )
        ),
    }
    return {"env": env, "bin": bin_dir, "log": log, "policy": policy}


def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60
    )


def test_it_uses_what_is_there(machine):
    executable(machine["bin"] / "nginx")
    done = run(machine["env"])
    assert done.returncode == 0
    assert f"==> tools: using {machine['bin']}/nginx" in done.stderr
    assert not machine["log"].exists()


def test_it_installs_the_missing_package_without_starting_it(machine):
    done = run(machine["env"])
    assert done.returncode == 0, done.stderr
    assert "==> tools: nginx not found; installing" in done.stderr
    assert f"==> tools: installed {machine['bin']}/nginx" in done.stderr
    calls = machine["log"].read_text().splitlines()
    assert calls == [
        "update -qq policy=exit 101",
        "install -y -qq --no-install-recommends nginx policy=exit 101",
    ]
    assert not machine["policy"].exists()  # removed once the install is over


def test_it_names_the_command_when_it_cannot_install(machine):
    env = {**machine["env"], "APT_GET": "/nonexistent/apt-get"}
    done = run(env)
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        "==> tools: nginx not found. Run `apt-get update && apt-get install -y "
        "--no-install-recommends nginx` (as root), then `make test` again."
    )


def test_it_does_not_try_to_install_as_another_user(machine):
    executable(machine["bin"] / "id", "echo 1000")
    done = run(machine["env"])
    assert done.returncode == 1
    assert "Run `apt-get update && apt-get install" in done.stderr
    assert not machine["log"].exists()


def test_a_failed_install_says_so_and_keeps_no_policy_behind(machine):
    env = {**machine["env"], "APT_GET": str(executable(machine["bin"] / "apt", "exit 100"))}
    done = run(env)
    assert done.returncode == 1
    assert "installing failed (status 100)" in done.stderr
    assert not machine["policy"].exists()


def test_it_installs_pgbouncer_for_the_pooling_tests(machine):
    executable(machine["bin"] / "nginx")
    (machine["bin"] / "pgbouncer").unlink()
    done = run(machine["env"])
    assert done.returncode == 0, done.stderr
    assert "==> tools: pgbouncer not found; installing" in done.stderr
    calls = machine["log"].read_text().splitlines()
    assert calls[-1] == "install -y -qq --no-install-recommends pgbouncer policy=exit 101"
