#!/usr/bin/env python3
"""The `memory_search` command inside the sandbox: the memory tool for an agent that has a shell.

    memory_search [-k K] QUERY...

It asks the episode's gateway (through the unix socket bound into the sandbox) to run the same
search the `memory_search` tool runs, over the same index, and prints what the tool would return:
the call is logged and counted like the tool's. Its settings (socket, token, the tool's
description) are in `memory_search.json` one directory up, written by the host.

This file runs inside the sandbox under whatever python3 is there (3.6+): it imports nothing but
the standard library and is copied into the sandbox, never imported from sdebench.
"""

import argparse
import http.client
import json
import os
import socket
import sys

SETTINGS = "memory_search.json"
TIMEOUT_S = 120


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a unix socket."""

    def __init__(self, path):
        super().__init__("localhost", timeout=TIMEOUT_S)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(TIMEOUT_S)
        self.sock.connect(self.path)


def settings():
    """The host-written settings beside this command's directory."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    with open(os.path.join(here, SETTINGS)) as f:
        return json.load(f)


def main(argv=None):
    conf = settings()
    ap = argparse.ArgumentParser(prog="memory_search", description=conf["description"])
    ap.add_argument("-k", type=int, default=None, help="how many items to print (default 5, at most 20)")
    ap.add_argument("query", nargs="+", help="keywords to search for")
    args = ap.parse_args(argv)
    body = {"query": " ".join(args.query)}
    if args.k is not None:
        body["k"] = args.k
    conn = _UnixConnection(conf["socket"])
    try:
        conn.request("POST", conf["path"], body=json.dumps(body),
                     headers={"Content-Type": "application/json", "Authorization": "Bearer " + conf["token"]})
        reply = json.loads(conn.getresponse().read().decode("utf-8", "replace"))
    except (OSError, ValueError) as e:
        print(f"memory_search: the memory is unreachable ({type(e).__name__})", file=sys.stderr)
        return 2
    finally:
        conn.close()
    print(reply.get("output", ""))
    return 1 if reply.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
