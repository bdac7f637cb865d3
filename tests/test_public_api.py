import inspect

import think


def test_public_names_are_exactly_all() -> None:
    public = {n for n, v in vars(think).items() if not n.startswith("_") and not inspect.ismodule(v)}
    lazy = {"create_app"}  # loaded on first use: serving pulls in Starlette
    assert public | lazy == set(think.__all__) - {"__version__"}
    assert all(getattr(think, name) is not None for name in think.__all__)
    assert think.__all__ == sorted(think.__all__)  # a sorted list makes additions visible in review


def test_importing_think_does_not_load_optional_or_heavy_modules() -> None:
    import subprocess
    import sys

    heavy = ("httpx", "uvicorn", "starlette", "pydantic_ai", "llama_cpp")
    code = f"import sys, think; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
