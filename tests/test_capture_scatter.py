"""What roofline.torch.capture counts for an in-place op that writes a tensor by index: the values
it writes (and, accumulating, reads there), the source's values it writes and the index, not the
whole tensor it writes into. Worked out by hand from the shapes, never from the code's own
output.

torch iterates such an op over the values it writes, the source and the index restrided to that
shape and the written tensor restrided to it with stride 0 along the indexed dimension
(aten/src/ATen/native/TensorAdvancedIndexing.cpp; cuda/ScatterGatherKernel.cu).

Needs torch (the `torch` extra; .ci/run installs it)."""

from __future__ import annotations

from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.torch import capture  # noqa: E402

# a KV cache of 2 sequences x 8 heads x 64 positions x 16 dims, fp32; one new position
CACHE = (2, 8, 64, 16)
NEW = 2 * 8 * 1 * 16  # 256 values of the new token's keys


class Step(torch.nn.Module):
    """Runs ``update`` on its input and a tensor it keeps as a buffer (so that the capture has
    it on the meta device); returns the buffer."""

    def __init__(self, update, shape, dtype=torch.float32):
        super().__init__()
        self.register_buffer("cache", torch.zeros(shape, dtype=dtype))
        self.register_buffer("index", torch.zeros(1, dtype=torch.long))
        self.update = update

    def forward(self, x):
        self.update(self.cache, self.index, x)
        return self.cache


def _op(update, x, shape=CACHE, dtype=torch.float32):
    """(kind, bytes, FLOPs) of the one op ``update`` runs."""
    net = capture(Step(update, shape, dtype), x, mode="inference")
    ops = [(o.kind, o.bytes, o.flops) for o in net.ops()]
    assert len(ops) == 1, ops
    assert net.uncosted == ()
    return ops[0]


def test_a_kv_cache_updated_in_place_moves_the_new_token_not_the_cache():
    # Hugging Face's static cache: keys.index_copy_(2, cache_position, key_states)
    kind, nbytes, flops = _op(lambda c, i, x: c.index_copy_(2, i, x), torch.zeros(2, 8, 1, 16))
    assert kind == "aten.index_copy_"
    # the 256 new values read (1,024 B) and written into the cache (1,024 B), one int64 index
    # (8 B): 2,056 B; the whole cache read and written was 131,072 B more
    assert (nbytes, flops) == (NEW * 4 + NEW * 4 + 8, 0) == (2_056, 0)


def test_an_indexed_assignment_moves_what_it_assigns():
    # its fallback in Hugging Face (keys[:, :, cache_position] = key_states): index_put_
    def assign(c, i, x):
        c[:, :, i] = x

    kind, nbytes, _ = _op(assign, torch.zeros(2, 8, 1, 16))
    assert kind == "aten.index_put_"
    # the indexed dimension gives way to the index's shape (1): 2 x 8 x 1 x 16 = 256 written
    assert nbytes == NEW * 4 + NEW * 4 + 8 == 2_056


def test_an_accumulating_index_put_reads_where_it_writes():
    def accumulate(c, i, x):
        c.index_put_((i,), x, accumulate=True)

    # self (4 x 100) indexed along dim 0 by one index: 1 x 100 values read and written
    kind, nbytes, flops = _op(accumulate, torch.zeros(1, 100), shape=(4, 100))
    assert kind == "aten.index_put_"
    assert (nbytes, flops) == (100 * 4 + 2 * 100 * 4 + 8, 100) == (1_208, 100)


def test_scatters_move_a_value_per_index():
    index = torch.zeros(4, 3, dtype=torch.long)  # 12 indices into a 4 x 100 tensor, 96 B

    def scatter(c, i, x):
        c.scatter_(1, index.to(c.device), x)

    def scatter_add(c, i, x):
        c.scatter_add_(1, index.to(c.device), x)

    def scatter_value(c, i, x):
        c.scatter_(1, index.to(c.device), 0.5)

    def scatter_reduce(c, i, x):
        c.scatter_(1, index.to(c.device), x, reduce="add")

    src = torch.zeros(4, 3)
    # the index (96 B), the 12 source values (48 B), the 12 values written (48 B)
    assert _with_copy(scatter, src) == ("aten.scatter_", 96 + 48 + 48, 0)
    # accumulating: the 12 values read too, one add each
    assert _with_copy(scatter_add, src) == ("aten.scatter_add_", 96 + 48 + 2 * 48, 12)
    assert _with_copy(scatter_reduce, src) == ("aten.scatter_", 96 + 48 + 2 * 48, 12)
    # a scalar source: nothing read but the index
    assert _with_copy(scatter_value, src) == ("aten.scatter_", 96 + 48, 0)


def _with_copy(update, x):
    """The indexed op of ``update`` on a 4 x 100 fp32 buffer, the index's copy to the meta
    device (``.to``) left out."""
    net = capture(Step(update, (4, 100)), x, mode="inference")
    assert net.uncosted == ()
    found = [(o.kind, o.bytes, o.flops) for o in net.ops() if o.kind != "aten._to_copy"]
    assert len(found) == 1, found
    return found[0]


def test_index_add_and_index_fill_move_the_slices_they_touch():
    index = torch.zeros(3, dtype=torch.long)  # 3 columns of a 4 x 100 tensor, 24 B

    def index_add(c, i, x):
        c.index_add_(1, index.to(c.device), x)

    def index_fill(c, i, x):
        c.index_fill_(1, index.to(c.device), 0.0)

    # index_add_: the 4 x 3 source (48 B), its 12 values of self read and written (96 B)
    assert _with_copy(index_add, torch.zeros(4, 3)) == ("aten.index_add_", 24 + 48 + 96, 12)
    # index_fill_: 3 columns of 4 values written (48 B), nothing read but the index
    assert _with_copy(index_fill, torch.zeros(4, 3)) == ("aten.index_fill_", 24 + 48, 0)


def test_the_out_of_place_forms_copy_the_whole_tensor():
    # index_copy (no underscore) returns a new tensor: self copied into the result (read whole,
    # written whole: 4 x 100 x 4 B twice), then index_copy_ into it (TensorAdvancedIndexing.cpp,
    # index_copy_out: ``result.copy_(self)``, then the stub): the source and index read (48 B,
    # 24 B) and the source's 12 values written at their index (48 B)
    index = torch.zeros(3, dtype=torch.long)

    class OutOfPlace(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(4, 100, device=x.device).index_copy(1, index.to(x.device), x)

    net = capture(OutOfPlace(), torch.zeros(4, 3), mode="inference")
    ops = {o.kind: o.bytes for o in net.ops()}
    assert ops["aten.index_copy"] == 2 * 400 * 4 + 48 + 24 + 48 == 3_320


def test_an_fp32_cache_in_a_bf16_model_counts_its_own_bytes():
    class Bf16Step(Step):
        """A bf16 model (its parameter says so) keeping an fp32 cache."""

        def __init__(self):
            super().__init__(lambda c, i, x: c.index_copy_(2, i, x.float()), CACHE)
            self.w = torch.nn.Parameter(torch.zeros(1, dtype=torch.bfloat16))

    net = capture(Bf16Step(), torch.zeros(2, 8, 1, 16, dtype=torch.bfloat16), mode="inference")
    assert net.dtype == "bf16"
    ops = {o.kind: (o.bytes, o.dtype) for o in net.ops()}
    # the fp32 source (1,024 B) read and written into the fp32 cache (1,024 B), the index 8 B:
    # at 4 B a value whatever the model's 2 B, and named fp32
    assert ops["aten.index_copy_"] == (2_056, "fp32")
    # the cast before it: 256 bf16 values read (512 B), 256 fp32 written (1,024 B)
    assert ops["aten._to_copy"] == (1_536, "fp32")


class Logits(torch.nn.Module):
    """``f`` of a 64 x 1,000 table of logits it learns (fp32): a backward runs through ``f``."""

    def __init__(self, f):
        super().__init__()
        self.table = torch.nn.Parameter(torch.zeros(64, 1000))
        self.f = f

    def forward(self, index):
        return self.f(self.table * 1.0, index)


def _backward(f):
    """{kind: (bytes, FLOPs)} of the backward ops of ``Logits(f)`` trained on 64 indices."""
    net = capture(Logits(f), torch.zeros(64, dtype=torch.long), mode="train")
    assert net.uncosted == ()
    return {o.kind: (o.bytes, o.flops) for o in net.ops() if o.pass_ == "backward"}


def test_a_gathers_backward_scatters_into_its_zeros_in_place():
    # a per-token log-probability (log_softmax(x).gather(-1, labels)): its backward zero-fills
    # a 64 x 1,000 gradient (256,000 B written), then scatter_add_ writes one value per row into
    # it: the 64 gradient values read (256 B), the 64 int64 indices (512 B), the 64 values it
    # adds to read and written (512 B): 1,280 B. The out-of-place scatter_add the meta device
    # runs instead read the zeros and wrote them again whole: 512,768 B
    ops = _backward(lambda x, i: x.log_softmax(-1).gather(-1, i[:, None]).sum())
    assert ops["aten.new_zeros"][0] == 64 * 1000 * 4 == 256_000
    assert ops["aten.scatter_add_"] == (64 * 4 + 64 * 8 + 2 * 64 * 4, 64) == (1_280, 64)
    assert "aten.scatter_add" not in ops


def test_an_index_selects_backward_adds_its_rows_in_place_and_is_costed():
    # index_select(0, 8 indices) of the table: backward index_add_ of the 8 x 1,000 gradient into
    # zeros: 8,000 values read (32,000 B), 8 indices (64 B), 8,000 values read and written
    # (64,000 B), an add each; the out-of-place index_add was counted whole and named uncosted
    ops = _backward(lambda x, i: x.index_select(0, i[:8]).sum())
    assert ops["aten.index_add_"] == (8000 * 4 + 8 * 8 + 2 * 8000 * 4, 8000) == (96_064, 8000)


def test_a_topks_backward_writes_its_values_in_place():
    # topk(2) over each row: backward scatter_ of the 64 x 2 gradient into zeros: 128 values
    # read (512 B), 128 indices (1,024 B), 128 values written (512 B)
    ops = _backward(lambda x, i: x.topk(2, -1).values.sum())
    assert ops["aten.scatter_"] == (128 * 4 + 128 * 8 + 128 * 4, 0) == (2_048, 0)


def test_repeated_indices_touch_each_value_once_at_most():
    # 8 rows of 100 added at index 0 of a 4 x 100 tensor: 800 values written, but the tensor
    # holds 400: at most those read and written (3,200 B), the 800 source values (3,200 B), 8
    # indices (64 B)
    def accumulate(c, i, x):
        c.index_put_((i.expand(8),), x, accumulate=True)

    kind, nbytes, flops = _op(accumulate, torch.zeros(8, 100), shape=(4, 100))
    assert (kind, nbytes, flops) == ("aten.index_put_", 2 * 400 * 4 + 800 * 4 + 64, 800) \
        == ("aten.index_put_", 6_464, 800)
