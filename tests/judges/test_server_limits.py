"""What a model server reports about its context and slots, read as each server writes it."""
from __future__ import annotations

from sourcecheckup.llm.server_limits import read_server_limits
from tests.support.fake_llama_server import FakeLlamaServer
from tests.support.fake_model_servers import OLLAMA_MODELS, VLLM_MODELS, FakeModelServer


async def test_llama_cpp_reports_the_slot_context_the_shared_cache_and_the_slots():
    with FakeLlamaServer(n_ctx=4096, n_slots=4, unified=False) as server:
        limits = await read_server_limits(server.base_url, "model.gguf")
    assert (limits.context_tokens, limits.slots) == (1024, 4)
    assert limits.tokenizer == "llama.cpp" and "4 slot(s)" in limits.describe()


async def test_llama_cpp_slots_share_at_most_the_context_one_slot_reports():
    # llama-server reports one slot's context in /props and /v1/models alike and never says whether
    # its cache is unified: `-c 4096` (4 slots sharing 4,096) and `-c 16384 -np 4` (4 x 4,096 apart)
    # read the same, so the slots together are held to one slot's context, which overflows neither
    for unified, n_ctx in ((True, 4096), (False, 16384)):
        with FakeLlamaServer(n_ctx=n_ctx, n_slots=4, unified=unified) as server:
            limits = await read_server_limits(server.base_url, "model.gguf")
        assert (limits.context_tokens, limits.shared_tokens, limits.slots) == (4096, 4096, 4)


async def test_vllm_reports_max_model_len():
    with FakeModelServer({"/v1/models": (200, VLLM_MODELS)}) as server:
        limits = await read_server_limits(f"http://127.0.0.1:{server.port}/v1", "bespokelabs/Bespoke-MiniCheck-7B")
    assert limits.context_tokens == 32768 and limits.tokenizer == "vllm"


async def test_ollama_reports_num_ctx_else_its_default_window():
    show = {"parameters": "num_ctx                        8192\nstop \"<|im_end|>\"",
            "model_info": {"qwen2.context_length": 32768}}
    with FakeModelServer({"/v1/models": (200, OLLAMA_MODELS), "/api/show": (200, show)}) as server:
        limits = await read_server_limits(f"http://127.0.0.1:{server.port}/v1", "bespoke-minicheck:latest")
    assert limits.context_tokens == 8192 and limits.tokenizer is None
    show = {"parameters": "stop \"<|im_end|>\"", "model_info": {"qwen2.context_length": 32768}}
    with FakeModelServer({"/v1/models": (200, OLLAMA_MODELS), "/api/show": (200, show)}) as server:
        limits = await read_server_limits(f"http://127.0.0.1:{server.port}/v1", "bespoke-minicheck:latest")
    assert limits.context_tokens == 4096


async def test_a_server_that_says_nothing_keeps_the_defaults():
    with FakeModelServer({"/v1/models": (200, {"object": "list", "data": [{"id": "m"}]})}) as server:
        limits = await read_server_limits(f"http://127.0.0.1:{server.port}/v1", "m")
    assert limits.context_tokens is None and "did not report" in limits.describe()
