"""Three hosts on this machine for `ray up examples/cluster-cpu.yaml` (docs/scale_out.md).

    sudo python3 scripts/local_cluster.py up [--install]    # bridge, 3 namespaces, 3 sshd, a key
    sudo python3 scripts/local_cluster.py status
    sudo python3 scripts/local_cluster.py down [--purge]    # every process in them, then the rest

Each host is a Linux network namespace on a private bridge (evk46br, 10.213.46.1/24 on this
side), with its own address (head 10.213.46.10, workers .11 and .12) and no route anywhere
else, so nothing the cluster does can leave the bridge. Each runs its own sshd, bound to its
address only, in its own PID and mount namespaces where /root (its home: the launcher's setup location),
/tmp (Ray's session files) and /mnt are the node's own, /mnt/shared/evokernel is one folder of
this machine that every node sees (the "shared file system"), and pip's machine-wide settings
are hidden (a fresh node knows no package source). Each node's files (home, /tmp) are on its own
disk, an ext4 image mounted at STATE/<node> (where loop devices work), so taking a node down
unmounts one file instead of deleting the ~2 GB environment its setup installed, file by file
(about 2 minutes for three nodes on a busy disk). `up` writes the client key
examples/cluster-cpu.yaml names, /var/tmp/evokernel-local-cluster/ssh/id_ed25519. Needs root.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

STATE = Path("/var/tmp/evokernel-local-cluster")  # examples/cluster-cpu.yaml names its key and shared path
BRIDGE, BRIDGE_ADDRESS, PREFIX = "evk46br", "10.213.46.1", 24
NODES = {"evk46-head": "10.213.46.10", "evk46-w1": "10.213.46.11", "evk46-w2": "10.213.46.12"}
CLIENT_KEY = STATE / "ssh" / "id_ed25519"  # ssh expands ~ from passwd, not $HOME: an absolute path
SHARED_MOUNT = "/mnt/shared/evokernel"
# The tools the hosts and `ray up` need, and the Debian packages that bring them.
TOOLS = {"sshd": "openssh-server", "ssh": "openssh-client", "ssh-keygen": "openssh-client",
         "rsync": "rsync", "ip": "iproute2", "unshare": "util-linux", "nsenter": "util-linux"}
PIP_SETTINGS = ("/etc/pip.conf", "/etc/xdg/pip")
NODE_DISK_BYTES = 8 << 30  # sparse: only what a node writes takes space

SSHD_CONFIG = """ListenAddress {address}
HostKey {state}/ssh/host_ed25519
AuthorizedKeysFile {state}/ssh/authorized_keys
PidFile {state}/{node}/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
X11Forwarding no
AllowTcpForwarding local
Subsystem sftp internal-sftp
"""

# Run in the node's network namespace, in fresh mount and PID namespaces: the node's own home,
# /tmp and /mnt, the shared folder, no machine-wide pip settings; then sshd in the foreground,
# under NODE_INIT as the namespace's PID 1. Its own PIDs matter: `ray stop` (start commands,
# `ray down`) ends every Ray process it can see, which would otherwise be the other nodes' and
# this machine's.
NODE_MOUNTS = """set -e
mount --bind {state}/{node}/home /root
mount --bind {state}/{node}/tmp /tmp
mount -t tmpfs evk46-mnt /mnt
mkdir -p {shared_mount}
mount --bind {state}/shared {shared_mount}
for hidden in {pip_settings}; do
  if [ -d "$hidden" ]; then mount -t tmpfs evk46-pip "$hidden"; elif [ -e "$hidden" ]; then mount --bind /dev/null "$hidden"; fi
done
mkdir -p /run/sshd
exec python3 {state}/node_init.py /usr/sbin/sshd -D -e -f {state}/{node}/sshd_config
"""

# PID 1 of a node: runs sshd and reaps every process that ends up its child. A PID namespace's
# orphans (Ray's daemons once `ray start` exits) are re-parented to its PID 1; sshd there left
# them unreaped when they ended, and Ray's agents, which watch the raylet's pid, saw the raylet's
# zombie alive and outlived `ray down`.
NODE_INIT = """import os, signal, subprocess, sys
sshd = subprocess.Popen(sys.argv[1:])
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda number, frame: sshd.send_signal(number))
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        sys.exit(0)
    if pid == sshd.pid:
        sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
"""


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=check, capture_output=True, text=True)


def missing_tools() -> dict[str, str]:
    return {tool: package for tool, package in TOOLS.items()
            if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists()}


def install_tools() -> None:
    packages = sorted(set(missing_tools().values()))
    if packages:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], check=True, env=env, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-q", *packages], check=True, env=env, capture_output=True)


def namespaces() -> set[str]:
    return {line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line.strip()}


def _sshd_answers(address: str, timeout_s: float = 20.0) -> bool:
    import socket

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, 22), timeout=2) as sock:
                if sock.recv(64).startswith(b"SSH-"):
                    return True
        except OSError:
            time.sleep(0.3)
    return False


def _mounted() -> list[str]:
    """Mount points under STATE (the nodes' disks), deepest first."""
    points = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    return sorted((p for p in points if p.startswith(f"{STATE}/")), key=len, reverse=True)


def _node_disk(node: str) -> None:
    """The node's own disk at STATE/<node>: a fresh ext4 image on a loop device; a plain folder
    where loop devices are not available (then `down` deletes its files one by one)."""
    image, folder = STATE / f"{node}.img", STATE / node
    folder.mkdir(parents=True, exist_ok=True)
    with image.open("wb") as disk:
        disk.truncate(NODE_DISK_BYTES)
    made = run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", str(image),
               check=False)
    if made.returncode != 0 or run("mount", "-o", "loop", str(image), str(folder), check=False).returncode != 0:
        image.unlink(missing_ok=True)


def _remove_node_disks() -> None:
    """Unmount the nodes' disks (their processes are gone) and delete the images and folders."""
    for point in _mounted():
        if run("umount", point, check=False).returncode != 0:
            run("umount", "--lazy", point, check=False)  # still busy: detached now, freed when released
    for node in NODES:
        (STATE / f"{node}.img").unlink(missing_ok=True)
        shutil.rmtree(STATE / node, ignore_errors=True)


def up(client_key: Path) -> None:
    if os.geteuid() != 0:
        sys.exit("local_cluster: needs root (network and mount namespaces)")
    if missing := missing_tools():
        sys.exit(f"local_cluster: missing {', '.join(sorted(missing))}: apt-get install "
                 f"{' '.join(sorted(set(missing.values())))} (or run `up --install`)")
    down(quiet=True)  # idempotent: whatever an earlier run left goes first (nodes' disks included)
    shutil.rmtree(STATE / "ssh", ignore_errors=True)  # fresh keys; the shared folder stays
    (STATE / "ssh").mkdir(mode=0o700, parents=True)
    (STATE / "shared").mkdir(exist_ok=True)
    (STATE / "node_init.py").write_text(NODE_INIT)
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(STATE / "ssh" / "host_ed25519"))
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "evokernel-local-cluster", "-f", str(client_key))
    (STATE / "ssh" / "authorized_keys").write_text(client_key.with_suffix(".pub").read_text())
    run("ip", "link", "add", BRIDGE, "type", "bridge")
    run("ip", "addr", "add", f"{BRIDGE_ADDRESS}/{PREFIX}", "dev", BRIDGE)
    run("ip", "link", "set", BRIDGE, "up")
    for index, (node, address) in enumerate(NODES.items()):
        _node_disk(node)
        for folder in ("home", "tmp"):
            (STATE / node / folder).mkdir(parents=True, exist_ok=True)
        (STATE / node / "tmp").chmod(0o1777)
        (STATE / node / "sshd_config").write_text(SSHD_CONFIG.format(address=address, state=STATE, node=node))
        outside, inside = f"evk46v{index}", f"evk46n{index}"
        run("ip", "netns", "add", node)
        run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        run("ip", "link", "set", outside, "master", BRIDGE, "up")
        run("ip", "link", "set", inside, "netns", node)
        in_node = ("ip", "netns", "exec", node)
        run(*in_node, "ip", "addr", "add", f"{address}/{PREFIX}", "dev", inside)
        run(*in_node, "ip", "link", "set", inside, "up")
        run(*in_node, "ip", "link", "set", "lo", "up")
        script = NODE_MOUNTS.format(state=STATE, node=node, shared_mount=SHARED_MOUNT,
                                    pip_settings=" ".join(PIP_SETTINGS))
        with (STATE / node / "sshd.log").open("w") as log:
            subprocess.Popen([*in_node, "unshare", "--mount", "--propagation", "private", "--pid", "--fork",
                              "--mount-proc", "sh", "-c", script],
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    for node, address in NODES.items():
        if not _sshd_answers(address):
            log_text = (STATE / node / "sshd.log").read_text()
            down(quiet=True)
            sys.exit(f"local_cluster: sshd of {node} does not answer on {address}:22\n{log_text}")
    print(f"local_cluster: up: {', '.join(f'{n} {a}' for n, a in NODES.items())}; "
          f"bridge {BRIDGE} {BRIDGE_ADDRESS}/{PREFIX}; key {client_key}; shared {STATE / 'shared'}")


def _pids_in(node: str) -> list[int]:
    return [int(pid) for pid in run("ip", "netns", "pids", node, check=False).stdout.split()]


def down(quiet: bool = False, purge: bool = False) -> None:
    """Every process in our namespaces (sshd, Ray, anything they started), then the links and the
    nodes' disks; with `purge`, the keys and the shared folder (bank, runs) too."""
    ours = [node for node in NODES if node in namespaces()]
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        for node in ours:
            for pid in _pids_in(node):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + wait_s
        while any(_pids_in(node) for node in ours) and time.monotonic() < deadline:
            time.sleep(0.2)
    for node in ours:
        run("ip", "netns", "delete", node, check=False)
    for index in range(len(NODES)):
        run("ip", "link", "delete", f"evk46v{index}", check=False)
    run("ip", "link", "delete", BRIDGE, check=False)
    _remove_node_disks()
    if purge:
        shutil.rmtree(STATE, ignore_errors=True)
    if not quiet:
        left = [node for node in NODES if node in namespaces()]
        print("local_cluster: down" + (f"; still there: {left}" if left else ""))


def status() -> int:
    present = namespaces()
    for node, address in NODES.items():
        if node not in present:
            print(f"{node} {address}: absent")
            continue
        pids = _pids_in(node)
        print(f"{node} {address}: {len(pids)} processes, sshd {'answers' if _sshd_answers(address, 2) else 'silent'}")
    return 0 if all(node in present for node in NODES) else 1


def link(node: str, state: str) -> None:
    """Cut a node off (its link down) or bring it back: the fault test's lever."""
    index = list(NODES).index(node)
    run("ip", "link", "set", f"evk46v{index}", state)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("up", help="create the bridge, the three hosts and their sshd")
    start.add_argument("--install", action="store_true", help="apt-get install missing tools first")
    stop = sub.add_parser("down", help="stop everything in the hosts and remove them")
    stop.add_argument("--purge", action="store_true", help=f"remove {STATE} too (keys, shared folder)")
    sub.add_parser("status")
    cut = sub.add_parser("link", help="take a node's link down (cut it off) or up again")
    cut.add_argument("node", choices=list(NODES))
    cut.add_argument("state", choices=["down", "up"])
    args = parser.parse_args(argv)
    if args.command == "up":
        if args.install:
            install_tools()
        up(CLIENT_KEY)
    elif args.command == "down":
        down(purge=args.purge)
    elif args.command == "link":
        link(args.node, args.state)
    else:
        return status()
    return 0


if __name__ == "__main__":
    sys.exit(main())
