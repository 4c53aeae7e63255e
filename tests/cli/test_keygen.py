"""zps keygen, and the security flags the launchers share."""

import argparse
import os
import stat

import pytest

from zps.cli import common, keygen
from zps.cli import main as zps_main
from zps.transport import security


def test_keygen_writes_a_keypair_and_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "keys"
    assert zps_main.main(["keygen", "--out", str(out)]) == 0
    public_file, secret_file = out / "cluster.key", out / "cluster.key_secret"
    assert stat.S_IMODE(os.stat(secret_file).st_mode) == 0o600
    public, secret = security.load_keypair(str(secret_file))
    assert security.load_public_key(str(public_file)) == public and len(secret) == 40
    printed = capsys.readouterr().out
    assert str(public_file) in printed and security.fingerprint(public) in printed
    assert "ZPS_CURVE_SECRET_KEY_FILE=%s" % secret_file in printed

    assert keygen.main(["--out", str(out)]) == 1
    assert "already exists: pass --force" in capsys.readouterr().err
    assert security.load_public_key(str(public_file)) == public   # untouched
    assert keygen.main(["--out", str(out), "--force"]) == 0
    assert security.load_public_key(str(public_file)) != public

    assert keygen.main(["--out", str(out), "--name", "alice"]) == 0
    assert sorted(os.listdir(out)) == ["alice.key", "alice.key_secret", "cluster.key",
                                       "cluster.key_secret"]
    assert keygen.main(["--out", str(out), "--name", "../x"]) == 1


def test_zps_help_lists_keygen(capsys):
    assert zps_main.main(["--help"]) == 0
    assert "keygen" in capsys.readouterr().out


def _flags(*argv):
    parser = argparse.ArgumentParser()
    common.add_security_flags(parser)
    return parser.parse_args(list(argv))


def test_security_flags_set_the_environment(tmp_path):
    public_file, secret_file = security.create_keypair(str(tmp_path), "cluster")
    env = {}
    assert common.apply_security_flags(_flags(), env) is None and env == {}
    cfg = common.apply_security_flags(_flags("--curve_secret_key_file", secret_file,
                                             "--curve_server_key_file", public_file,
                                             "--curve_allowed_keys_dir", str(tmp_path),
                                             "--allow_pickle"), env)
    assert env == {security.SECRET_KEY_ENV: secret_file, security.SERVER_KEY_ENV: public_file,
                   security.ALLOWED_KEYS_ENV: str(tmp_path), security.ALLOW_PICKLE_ENV: "1"}
    assert cfg.public_key == cfg.server_key
    with pytest.raises(security.KeyConfigError, match="ZPS_CURVE_SECRET_KEY_FILE: .*holds no secret"):
        common.apply_security_flags(_flags("--curve_secret_key_file", public_file), {})


def test_ps_reports_bad_keys_before_serving(tmp_path, monkeypatch):
    from zps.cli import ps
    monkeypatch.setenv(security.SECRET_KEY_ENV, "")   # restored after: ps.main sets it
    code = ps.main(["--ps_hosts", "127.0.0.1:1", "--worker_hosts", "127.0.0.1:2",
                    "--curve_secret_key_file", str(tmp_path / "missing")])
    assert code == 2
