"""The sd_notify protocol: state lines (READY=1, STATUS=..., STOPPING=1) sent as one
datagram to the unix socket systemd names in $NOTIFY_SOCKET; nothing when it is unset."""

import logging
import os
import socket

NOTIFY_SOCKET = "NOTIFY_SOCKET"

log = logging.getLogger(__name__)


def notify(*lines: str) -> bool:
    """Send lines (like "READY=1", "STATUS=serving") to systemd; False if not asked to."""
    address = os.environ.get(NOTIFY_SOCKET)
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto("\n".join(lines).encode(), address)
    except OSError as exc:
        log.warning("cannot notify systemd at %s: %s", address, exc.strerror or exc)
        return False
    return True
