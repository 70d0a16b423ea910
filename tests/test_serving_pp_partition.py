"""A pipeline's split given by hand (``--pp A,B,...``, library ``pp=[A, B, ...]``), as vLLM's
``VLLM_PP_LAYER_PARTITION`` gives one: ``get_pp_indices`` (vllm/distributed/utils.py) reads the
comma list as the layers of each stage, refusing it unless it has pp entries adding up to the
model's layers. Each figure by hand from the small model of tests/test_serving_pp.py: a
Llama-like decoder of 5 blocks, hidden 1024, 16 heads of 64, 8 KV heads, a gated FFN of 2816,
vocabulary 32000, bf16; a block 11,798,528 parameters, the embedding and the (untied) LM head
32,000 x 1,024 each, the final RMSNorm 1,024."""

from __future__ import annotations

import json

import pytest
from test_serving_pp import SMALL  # the 5-block Llama-like model.yaml

from roofline import analyze_model, compare
from roofline.errors import InputError

H100 = "h100-sxm5-80gb"
BLOCK = 11_798_528
EMBED = 32_000 * 1024


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "llama-5.yaml"
    path.write_text(SMALL)
    return path


def test_the_blocks_of_each_stage_as_given(small):
    # pp=[1, 4]: stage 0 the embedding and block 1, stage 1 blocks 2-5, the final norm and the
    # head (vLLM's own split of 5 over 2 is 3, 2). Weights, bf16: stage 0 2 x (32,768,000 +
    # 11,798,528) = 89,133,056 B; stage 1 2 x (4 x 11,798,528 + 1,024 + 32,768,000) =
    # 159,926,272 B. KV cache, 2 batches in flight: 2 x 8 x 64 x 64 x 4 x 2 B = 524,288 a block
    # a batch
    pp = analyze_model(small, H100, pp=[1, 4]).pipeline_parallel
    assert pp.stages.blocks == (1, 4) and pp.stages.given
    assert pp.stages.names == (("embed", "blk.1"), ("blk.2", "lm_head"))
    first, second = pp.stages.memories
    assert first.parts["weights"] == 89_133_056
    assert second.parts["weights"] == 159_926_272
    assert (first.parts["kv_cache"], second.parts["kv_cache"]) == (2 * 524_288, 2 * 4 * 524_288)
    assert pp.stages.heaviest == 1
    assert pp.to_dict()["split"] == "given"
    assert analyze_model(small, H100, pp=2).pipeline_parallel.to_dict()["split"] == "vllm"


def test_a_split_that_equals_vllms_gives_what_vllms_does(small):
    given = analyze_model(small, H100, pp=[3, 2]).to_dict()
    counted = analyze_model(small, H100, pp=2).to_dict()
    assert given["pipeline_parallel"].pop("split") == "given"
    assert counted["pipeline_parallel"].pop("split") == "vllm"
    assert given == counted


@pytest.mark.parametrize("pp, problem", [
    ([3, 3], "the stages' blocks 3,3 add up to 6, not the model's 5 transformer blocks"),
    ([2, 2], "add up to 4, not the model's 5"),
    ([1, 1, 1, 1, 1, 1], "pipeline parallelism 6 is more stages than the model's 5"),
    ([2, 0, 3], "expected a positive integer, got 0"),
    ([], "expected the blocks of each stage, got an empty list"),
])
def test_a_split_the_model_cannot_take_is_refused_in_one_line(small, pp, problem):
    with pytest.raises(InputError, match=problem):
        analyze_model(small, H100, pp=pp)


def test_the_cli_reads_a_comma_list_and_says_whose_split(small, invoke):
    result = invoke("analyze", small, "--hw", H100, "--pp", "1,4")
    assert result.exit_code == 0, result.output
    assert "stage 0 embed .. blk.1 (1 block), stage 1 blk.2 .. lm_head (4 blocks) (the split " \
           "given, as VLLM_PP_LAYER_PARTITION gives vLLM one)" in " ".join(result.output.split())
    data = json.loads(invoke("analyze", small, "--hw", H100, "--pp", "1,4", "--format",
                             "json").output)
    assert [s["blocks"] for s in data["pipeline_parallel"]["stages"]] == [1, 4]
    for bad, said in (("1,x", "stage 1's blocks: expected a positive integer, got 'x'"),
                      ("2,", "stage 1's blocks: expected a positive integer, got ''"),
                      ("4,4", "add up to 8, not the model's 5")):
        result = invoke("analyze", small, "--hw", H100, "--pp", bad)
        assert result.exit_code == 2 and said in result.stderr, (bad, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1


def test_compare_serves_every_device_over_the_split_given(small):
    comparison = compare(small, [H100, "a100-sxm4-80gb"], pp=[1, 4])
    for report in comparison.reports:
        assert report.pipeline_parallel.stages.blocks == (1, 4)
        assert report.pipeline_parallel.stages.given
