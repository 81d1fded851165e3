"""torchrun's flags: values parsed as torchrun does, unsupported flags named, never a script."""

import pytest

from flexjob.cli.torchrun_flags import (
    check_backend,
    option_problem,
    parse_nproc,
    parse_rdzv_conf,
)


@pytest.mark.parametrize("script", ["--standalone", "--bogus=1", "-x", "--rdzv_foo"])
def test_an_option_in_the_script_position_is_an_error_naming_it(script: str) -> None:
    problem = option_problem(script)
    assert problem is not None and script.split("=")[0] in problem


@pytest.mark.parametrize(
    ("flag", "hint"),
    [
        ("--master-addr", "--rdzv-endpoint"),
        ("--master_port=29500", "--rdzv-endpoint"),
        ("--no_python", "Python"),
        ("--start-method", "spawn"),
    ],
)
def test_torchrun_flags_flexjob_does_not_take_are_named_with_what_to_do(
    flag: str, hint: str
) -> None:
    problem = option_problem(flag)
    assert problem is not None and "not supported" in problem and hint in problem


@pytest.mark.parametrize("script", ["train.py", "pkg.module", "-"])
def test_scripts_are_not_options(script: str) -> None:
    assert option_problem(script) is None


def test_nproc_takes_numbers_and_cpu() -> None:
    assert parse_nproc("4") == 4
    assert parse_nproc("cpu") >= 1


@pytest.mark.parametrize("text", ["0", "-1", "many", ""])
def test_bad_nproc_is_refused_naming_the_allowed_values(text: str) -> None:
    with pytest.raises(ValueError, match="cpu, gpu or auto"):
        parse_nproc(text)


def test_gpu_without_a_device_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ValueError, match="no CUDA device"):
        parse_nproc("gpu")


def test_rdzv_conf_sets_the_join_and_last_call_timeouts() -> None:
    conf = parse_rdzv_conf("join_timeout=600, last_call_timeout=2.5")
    assert (conf.join_timeout, conf.last_call_timeout) == (600.0, 2.5)
    assert parse_rdzv_conf("").join_timeout == 300.0


@pytest.mark.parametrize(
    ("text", "named"),
    [("read_timeout=5", "read_timeout"), ("join_timeout=soon", "join_timeout"), ("x", "x")],
)
def test_unknown_or_bad_rdzv_conf_keys_are_named(text: str, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        parse_rdzv_conf(text)


def test_rdzv_backends_flexjob_and_c10d_are_the_master_others_are_refused() -> None:
    assert check_backend("c10d") == "c10d"
    with pytest.raises(ValueError, match="flexjob, c10d"):
        check_backend("etcd")
