"""The sandbox side of the gateway: a loopback port inside the sandbox relayed to the gateway's unix socket.

    python3 relay.py --port 8377 --socket /path/gateway.sock [--stdout FILE] [--path-prepend DIR] -- COMMAND [ARGS...]

The sandbox has its own network namespace with nothing but loopback (bubblewrap --unshare-net,
docker network none), so the gateway, reached through the socket bound into the sandbox, is the
only peer the agent has. The relay listens on 127.0.0.1:PORT, forwards every connection byte for
byte to the socket, runs COMMAND (its stdout into FILE if given, so nothing caps it; DIR put first
on its PATH, where the sandbox's commands of the episode are), and exits with its exit code
(signals are passed on).

This file runs inside the sandbox under whatever python3 is there (3.6+): it imports nothing but
the standard library and is copied next to the socket, never imported from sdebench.
"""

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading

BUF = 65536


def pump(src, dst):
    """Copy bytes from src to dst until EOF, then half-close dst."""
    try:
        while True:
            data = src.recv(BUF)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def serve_one(conn, path):
    """Relay one accepted connection to the unix socket."""
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError:
        conn.close()
        up.close()
        return
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    back = threading.Thread(target=pump, args=(up, conn), daemon=True)
    back.start()
    pump(conn, up)
    back.join()
    conn.close()
    up.close()


def listen(port, path):
    """Accept connections on 127.0.0.1:port forever (daemon threads)."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(64)

    def loop():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=serve_one, args=(conn, path), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return srv


def main(argv=None):
    ap = argparse.ArgumentParser(description="relay a loopback port to a unix socket while a command runs")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--stdout", default=None)
    ap.add_argument("--path-prepend", default=None)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given")
    try:
        listen(args.port, args.socket)
    except OSError as e:
        print(f"relay: cannot listen on 127.0.0.1:{args.port}: {e}", file=sys.stderr)
        return 70
    env = dict(os.environ)
    if args.path_prepend:
        env["PATH"] = args.path_prepend + os.pathsep + env.get("PATH", os.defpath)
    try:
        out = open(args.stdout, "wb") if args.stdout else None  # noqa: SIM115 - the child writes it until exit
        child = subprocess.Popen(cmd, stdout=out, env=env)
    except OSError as e:
        print(f"relay: cannot run {cmd[0]}: {e}", file=sys.stderr)
        return 127

    def forward(signum, frame):
        child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    code = child.wait()
    return 128 - code if code < 0 else code  # killed by signal N: the shell's 128+N


if __name__ == "__main__":
    sys.exit(main())
