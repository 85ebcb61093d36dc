"""scripts/notebooks.sh starts Jupyter's notebook server on walkthroughs/notebooks: the server
answers on its port with the token the launcher printed, lists the notebooks, has a Python
kernel, and a kernel it starts imports the module the launcher built; then it is stopped and the
port is free again. No browser (--no-browser), no build
(--no-build: the suite's build/ has the module). ctest notebooks_launcher."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.status, r.read().decode()


def _evaluate_in_kernel(connection_file, code, expression):
    """Runs code in a running kernel (through its connection file), then evaluates expression
    there; returns its repr. Both travel on the shell channel, whose reply cannot be missed (the
    output channel drops what is published before the client subscribes)."""
    from jupyter_client import BlockingKernelClient
    client = BlockingKernelClient(connection_file=str(connection_file))
    client.load_connection_file()
    client.start_channels(hb=False)
    try:
        msg_id = client.execute(code, silent=True, user_expressions={"x": expression})
        while True:
            reply = client.get_shell_msg(timeout=90)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        content = reply["content"]
        assert content["status"] == "ok", content
        x = content["user_expressions"]["x"]
        assert x["status"] == "ok", x
        return x["data"]["text/plain"]
    finally:
        client.stop_channels()


def test_launcher_serves_the_notebooks(tmp_path):
    if not os.path.isfile(os.path.join(ROOT, "build", "python", "lmscope", "__init__.py")):
        pytest.skip("build/python has no module (scripts/build.sh builds it)")
    port = _free_port()
    env = dict(os.environ, HOME=str(tmp_path), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    env.pop("JUPYTER_TOKEN", None)
    p = subprocess.Popen([os.path.join(ROOT, "scripts", "notebooks.sh"), "--no-browser", "--no-build",
                          "--ip", "127.0.0.1", "--port", str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    try:
        first = p.stdout.readline()
        assert first.startswith("notebooks: open http://127.0.0.1:%d/tree?token=" % port), first
        token = first.strip().rsplit("token=", 1)[1]
        assert len(token) == 48, first
        deadline = time.time() + 90
        while True:                       # the server answers once it has started
            try:
                status, body = _get("http://127.0.0.1:%d/api/contents?token=%s" % (port, token))
                break
            except (urllib.error.URLError, ConnectionError):
                assert p.poll() is None, "the server exited:\n" + first + p.stdout.read()
                assert time.time() < deadline, "no answer on port %d within 90 s" % port
                time.sleep(0.5)
        assert status == 200
        names = sorted(c["name"] for c in json.loads(body)["content"])
        on_disk = sorted(f for f in os.listdir(os.path.join(ROOT, "walkthroughs", "notebooks")) if f.endswith(".ipynb"))
        assert on_disk and set(on_disk) <= set(names), (on_disk, names)
        status, body = _get("http://127.0.0.1:%d/api/kernelspecs?token=%s" % (port, token))
        assert "python3" in json.loads(body)["kernelspecs"], body
        # A kernel the server starts imports the module the launcher built (build/python).
        req = urllib.request.Request("http://127.0.0.1:%d/api/kernels?token=%s" % (port, token),
                                     data=b'{"name": "python3"}', method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            kernel_id = json.loads(r.read())["id"]
        where = _evaluate_in_kernel(tmp_path / "runtime" / ("kernel-%s.json" % kernel_id),
                                    "import lmscope", "lmscope.__file__")
        assert where == repr(os.path.join(ROOT, "build", "python", "lmscope", "__init__.py")), where
        with pytest.raises(urllib.error.HTTPError) as no_token:    # the token is what admits a browser
            _get("http://127.0.0.1:%d/api/contents" % port)
        assert no_token.value.code == 403
    finally:
        os.killpg(p.pid, signal.SIGTERM)   # the launcher exec'd the server: its group is the server's
        p.wait(timeout=30)
    with pytest.raises(ConnectionRefusedError):   # stopped: nothing listens on the port any more
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
