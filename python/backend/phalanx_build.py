"""The phalanx package's PEP 517 build backend: CMake builds the C++ module and the `phalanx`
executable, and this file packs them with python/phalanx into a wheel.

In-tree and dependency-free (pyproject.toml: `requires = []`), so `pip install .` needs no
network, with or without build isolation: what it needs is what `tools/install-deps --node`
installs (cmake, a C++ compiler, the libraries, pybind11-dev and the interpreter's headers).

Settings (`pip install . --config-settings KEY=VALUE`, or the environment):
  build-dir   PHALANX_BUILD_DIR    a CMake build folder to use (default: build-wheel/PYTAG in
                                   the source tree, configured Release, kept between builds).
                                   One already configured is only built, never reconfigured:
                                   `--config-settings build-dir=build` packs what ./tools/test
                                   built, in seconds.
  strip       PHALANX_WHEEL_STRIP  "0" keeps the debug information (default: stripped).
"""

import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "phalanx"
SUMMARY = ("Decentralized, Byzantine-robust gossip training: robust mixing, compression and "
           "fault injection for your own PyTorch loop")


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        found = re.search(r"project\(phalanx VERSION (\S+)", f.read())
    if not found:
        raise RuntimeError("phalanx_build: no `project(phalanx VERSION ...)` in CMakeLists.txt")
    return found.group(1)


def _tag():
    interpreter = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{interpreter}-{interpreter}-{platform}"


def _setting(config_settings, key, env, default):
    value = (config_settings or {}).get(key)
    if value is None:
        value = os.environ.get(env, default)
    return value


def _run(command, **kwargs):
    print("phalanx_build: " + " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, **kwargs)


def _build(config_settings):
    """Builds the module and the executable; returns the build folder."""
    build = _setting(config_settings, "build-dir", "PHALANX_BUILD_DIR", "")
    if not build:
        build = os.path.join(ROOT, "build-wheel", _tag())
    build = os.path.abspath(os.path.join(ROOT, build))
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        # The wheel's executable starts script peers (launch --script); jemalloc would only be
        # one more library for the host to have.
        _run(["cmake", "-S", ROOT, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release",
              "-DPHALANX_BUILD_TESTS=OFF", "-DPHALANX_CUDA=OFF", "-DPHALANX_PYTHON=ON",
              "-DPHALANX_JEMALLOC=OFF", f"-DPython_EXECUTABLE={sys.executable}"])
    _run(["cmake", "--build", build, "--target", "phalanx_python", "phalanx", "-j",
          str(os.cpu_count() or 1)])
    return build


def _files(build, strip):
    """(path in the wheel, bytes) of everything the wheel holds but its metadata."""
    package = os.path.join(build, "python", NAME)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    modules = [n for n in os.listdir(package) if n.startswith("_phalanx.") and n.endswith(".so")]
    if f"_phalanx{suffix}" not in modules:
        raise RuntimeError(
            f"phalanx_build: {package} has {modules or 'no module'}, not _phalanx{suffix} for "
            f"{sys.executable}: that build folder was configured for another interpreter (give "
            "another build-dir, or none)")
    out = []
    for name in sorted(os.listdir(package)):
        path = os.path.join(package, name)
        if name.endswith((".py", ".pyi")) or name == "py.typed":
            with open(path, "rb") as f:
                out.append((f"{NAME}/{name}", f.read()))
    out.append((f"{NAME}/_phalanx{suffix}", _binary(os.path.join(package, f"_phalanx{suffix}"),
                                                    strip)))
    out.append((f"{NAME}/bin/phalanx", _binary(os.path.join(build, "phalanx"), strip)))
    return out


def _binary(path, strip):
    if not strip or not shutil.which("objcopy"):
        with open(path, "rb") as f:
            return f.read()
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "stripped")
        _run(["objcopy", "--strip-debug", path, stripped])
        with open(stripped, "rb") as f:
            return f.read()


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\nSummary: {SUMMARY}\n"
            "License: Apache-2.0\nRequires-Python: >=3.9\nProvides-Extra: torch\n"
            "Requires-Dist: torch; extra == \"torch\"\n")


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(_metadata())
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _build(config_settings)
    strip = _setting(config_settings, "strip", "PHALANX_WHEEL_STRIP", "1") != "0"
    files = _files(build, strip)
    info = _dist_info()
    files.append((f"{info}/METADATA", _metadata().encode()))
    files.append((f"{info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: phalanx_build\n"
                                    f"Root-Is-Purelib: false\nTag: {_tag()}\n").encode()))
    files.append((f"{info}/entry_points.txt",
                  b"[console_scripts]\nphalanx = phalanx._cli:main\n"))
    name = f"{NAME}-{_version()}-{_tag()}.whl"
    record = "".join(_record_line(p, d) for p, d in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w",
                         zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files:
            entry = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            executable = path.endswith((".so", "/bin/phalanx"))
            entry.external_attr = (0o100755 if executable else 0o100644) << 16  # regular file
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
        entry = zipfile.ZipInfo(f"{info}/RECORD", date_time=(2026, 1, 1, 0, 0, 0))
        entry.external_attr = 0o100644 << 16
        wheel.writestr(entry, record, zipfile.ZIP_DEFLATED)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """The files git tracks, as NAME-VERSION.tar.gz."""
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                            capture_output=True).stdout.split(b"\0")
    base = f"{NAME}-{_version()}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as sdist:
        for path in (p.decode() for p in listed if p):
            full = os.path.join(ROOT, path)
            if os.path.isfile(full):
                sdist.add(full, arcname=f"{base}/{path}", recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
