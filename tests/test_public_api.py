import ast
import inspect
import subprocess
import sys

import think


def test_public_names_are_exactly_all() -> None:
    assert set(think._EXPORTS) == set(think.__all__) - {"__version__"}
    assert all(getattr(think, name) is not None for name in think.__all__)
    assert think.__all__ == sorted(think.__all__)  # a sorted list makes additions visible in review
    assert set(dir(think)) >= set(think.__all__)


def test_the_type_checking_imports_name_the_same_modules_as_the_lazy_table() -> None:
    tree = ast.parse(inspect.getsource(think))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    imported = {alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert imported == think._EXPORTS


def loaded_after(code: str, modules: tuple[str, ...]) -> list[str]:
    probe = f"import sys\n{code}\nprint(','.join(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


def test_a_plain_import_loads_no_subsystem() -> None:
    assert loaded_after("import think", ("think.agent", "think.messages", "pydantic", "anyio", "sqlite3")) == []


def test_the_agent_api_does_not_load_optional_or_heavy_modules() -> None:
    names = ", ".join(n for n in think.__all__ if n != "create_app")
    heavy = ("httpx", "uvicorn", "starlette", "pydantic_ai", "llama_cpp", "click", "rich", "jsonschema")
    assert loaded_after(f"from think import {names}", heavy) == []
    assert loaded_after("from think import create_app", ("starlette",)) == ["starlette"]


def test_the_agent_class_loads_no_sandbox_and_builds_no_message_model() -> None:
    """`from think import Think` stays fast: the interpreter host, the bubblewrap recipe and what
    only skills' XML needs load with their features; the message models build on first use."""
    heavy = ("think.sandbox.host", "think.sandbox.bash", "think.sandbox.bwrap", "think.tools.execute.runtime",
             "pydantic_monty", "xml.sax.saxutils", "urllib.request")
    assert loaded_after("from think import Think", heavy) == []
    probe = ("import mimetypes\nfrom think import Think\nfrom think.messages import Message, TextPart\n"
             "print(type(TextPart.__pydantic_validator__).__name__, mimetypes.inited)\n"
             "print(Message.user('hi', id='m1').dumps().decode())")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    built, first_use = out.strip().splitlines()
    assert built == "MockValSer False"
    assert first_use == '{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}'


def test_a_started_server_has_built_the_message_models() -> None:
    probe = ("import tempfile\nfrom starlette.testclient import TestClient\n"
             "from think import Think, create_app\n"
             "class Echo(Think):\n    pass\n"
             "from think.messages import Message, TextPart\n"
             "from think.runtime.embedded import EmbeddedRuntime\n"
             "app = create_app([Echo], runtime=EmbeddedRuntime(tempfile.mkdtemp()))\n"
             "before = type(TextPart.__pydantic_validator__).__name__\n"
             "with TestClient(app):\n"
             "    print(before, type(TextPart.__pydantic_validator__).__name__,"
             " type(Message.__pydantic_serializer__).__name__)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["MockValSer", "SchemaValidator", "SchemaSerializer"]
