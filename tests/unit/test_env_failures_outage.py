"""An index that answers with a server error (a mirror or proxy down: 502, 503) is out of reach, not the requirements'
failure: not remembered, the next session tries again (isolate/env_failures.py). A real HTTP server in the test that
answers every request so; uv names the status (pip says nothing of it below -vv, and is not asked here)."""

import http.server
import threading

import pytest

from gpu_budget.isolate import env_failures
from gpu_budget.isolate.environment import EnvironmentFailed, find_tool, make


class _Down(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def index_down(monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Down)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    for key in ("UV_FIND_LINKS", "UV_NO_INDEX", "UV_OFFLINE", "UV_EXTRA_INDEX_URL", "UV_INDEX", "PIP_FIND_LINKS",
                "PIP_NO_INDEX", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(key, raising=False)
    for key, value in {"UV_INDEX_URL": url, "UV_DEFAULT_INDEX": url, "UV_HTTP_RETRIES": "0",
                       "PIP_CONFIG_FILE": "/dev/null"}.items():
        monkeypatch.setenv(key, value)
    yield
    server.shutdown()


def test_an_index_answering_with_a_server_error_is_not_remembered(tmp_path, index_down):
    try:
        uv = find_tool("uv")
    except EnvironmentFailed as exc:
        pytest.skip(str(exc))
    with pytest.raises(EnvironmentFailed) as raised:
        make(["gbtiny==2.0"], tmp_path / "envs", uv)
    said = str(raised.value)
    assert "503 Service Unavailable" in said and raised.value.passing and "not remembered" in said, said
    again = pytest.raises(EnvironmentFailed, make, ["gbtiny==2.0"], tmp_path / "envs", uv).value
    assert again.remembered is False  # the next session tried the index again
    assert not [p for p in (tmp_path / "envs" / env_failures.FOLDER).glob("*.json") if '"passing": false' in p.read_text()]
