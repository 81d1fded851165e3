"""The user's config file: defaults for settings that also have environment variables.

``$FLEXJOB_CONFIG``, else ``$XDG_CONFIG_HOME/flexjob/config.yaml``, else
``~/.config/flexjob/config.yaml``: a YAML mapping of the keys in ``KEYS``. Precedence, highest
first: a command's own flag, the environment variable, this file, the built-in default —
``apply_config`` sets each variable from the file only where the environment has none, so child
processes (masters, agents) see the same values. Unknown keys and non-scalar values are errors
naming the key and the allowed ones.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import MutableMapping
from pathlib import Path

from flexjob.api import names
from flexjob.api.errors import ClientError, InvalidSpecError

ENV_CONFIG = "FLEXJOB_CONFIG"
#: config key → the environment variable it defaults.
KEYS = {
    "platform": names.ENV_PLATFORM,
    "home": names.ENV_HOME,
    "kubeconfig": "KUBECONFIG",
    "metrics_addr": names.ENV_METRICS_ADDR,
    "metrics_token": names.ENV_METRICS_TOKEN,
}

PATH_KEYS = ("home", "kubeconfig")  # "~" expands to the user's home


class ConfigError(ClientError, InvalidSpecError):
    """The config file cannot be used; the message names the file and the key (a
    ``FlexjobError`` and a ``ValueError``)."""


def config_path(env: MutableMapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG])
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flexjob" / "config.yaml"


def read_config(path: Path) -> dict[str, str]:
    """The file's settings (empty when there is no file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    import yaml  # only when there is a file: every command reads it before it runs

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of {', '.join(KEYS)}")
    out: dict[str, str] = {}
    for key, value in data.items():
        if key not in KEYS:
            near = difflib.get_close_matches(str(key), KEYS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ConfigError(f"{path}: unknown key {key!r}{hint}; allowed: {', '.join(KEYS)}")
        if isinstance(value, dict | list) or value is None:
            raise ConfigError(f"{path}: {key} must be a string or number, got {value!r}")
        out[key] = str(value)
    return out


def apply_config(env: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set each variable the config file gives and the environment lacks; what was set."""
    env = os.environ if env is None else env
    applied = {}
    for key, value in read_config(config_path(env)).items():
        var = KEYS[key]
        if not env.get(var):
            env[var] = os.path.expanduser(value) if key in PATH_KEYS else value
            applied[var] = value
    return applied
