"""``spec.brainService``: where a job's master finds the brain, in the forms flexjob takes.

For: validation (``api.validate``: a form not taken is a problem naming the field) and the
master's config (``core.training.master_config``: the URL its brain client calls). DLRover writes
``host:port`` (its brain's gRPC address); flexjob's brain serves HTTP, so ``host:port`` means
``http://host:port``; ``http://`` and ``https://`` URLs are taken as written. No I/O.
"""

import re

#: ``host:port`` as DLRover writes it: a DNS name or IPv4 address (or ``[IPv6]``) and a port.
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$")
_URL = re.compile(
    r"^https?://[^\s/:]+(:\d{1,5})?(/\S*)?$|^https?://\[[0-9A-Fa-f:.]+\](:\d{1,5})?(/\S*)?$"
)
FORMS = "host:port (DLRover's form, served as http://host:port) or an http:// or https:// URL"


def brain_url(value: str) -> str:
    """The URL flexjob's brain client calls for ``value``; ``ValueError`` naming the forms
    taken for any other."""
    text = value.strip()
    if _URL.match(text):
        return text
    match = _HOST_PORT.match(text)
    if match and 1 <= int(match[3]) <= 65535:
        return f"http://{text}"
    raise ValueError(f"{value!r} is not an address of the brain: give {FORMS}")
