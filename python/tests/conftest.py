"""Fixtures of the package's tests: the fprof binary to compare with, and the recorded profiles."""

import os
import subprocess

import pytest


def pytest_addoption(parser):
    parser.addoption("--fprof", required=True, help="the fprof command-line binary of the same build")
    parser.addoption("--data", required=True, help="tests/data of the checkout")


@pytest.fixture(scope="session")
def fprof_bin(request):
    return os.path.abspath(request.config.getoption("--fprof"))


@pytest.fixture(scope="session")
def data_dir(request):
    return os.path.abspath(request.config.getoption("--data"))


@pytest.fixture(scope="session")
def run_fprof(fprof_bin):
    """Runs the fprof command; returns (exit code, stdout, stderr)."""
    def run(*args, cwd=None):
        done = subprocess.run([fprof_bin, *map(str, args)], capture_output=True, text=True, cwd=cwd)
        return done.returncode, done.stdout, done.stderr
    return run
