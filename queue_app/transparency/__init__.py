"""The DSA Transparency Database: its statement contract, a client, and a stand-in server.

Pure Python and no database: `contract` holds every field rule and allowed value of a statement
of reasons, `submitter` sends statements to the database's API, and `standin` is a local server
enforcing the same contract, for tests and the demo.
"""
