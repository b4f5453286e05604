"""fp8lab.torch.attach on a nanoGPT-shaped model: the session's amax of every site and operand equals
tensor.abs().max() of the hooked tensor bit for bit; the run has the training-run layout and
fp8lab-cli inspect / decide open it; bad arguments are refused."""
import json
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import fp8lab  # noqa: E402
import fp8lab.torch  # noqa: E402
from tiny_gpt import GPT, batches  # noqa: E402


def train(model, steps, attachment=None, capture=None, seed=3):
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = batches(seed)
    handles = []
    if capture is not None:
        # An independent recorder of the same tensors: the outside truth the session must equal.
        for name, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear):
                def fwd(m, inp, out, name=name):
                    capture.setdefault((name, "input"), []).append(inp[0].detach().abs().max().item())
                    capture.setdefault((name, "kernel"), []).append(m.weight.detach().abs().max().item())
                    out.register_hook(lambda g, name=name: capture.setdefault((name, "output_grad"), []).append(
                        g.detach().abs().max().item()))
                handles.append(mod.register_forward_hook(fwd))
    losses = []
    for _ in range(steps):
        x, y = next(data)
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if attachment is not None:
            attachment.step(loss)
    for h in handles:
        h.remove()
    return losses


def test_amax_equals_torch_max_bit_for_bit(tmp_path):
    torch.manual_seed(0)
    model = GPT()
    capture = {}
    run = fp8lab.torch.attach(model, tmp_path / "s.h5", recipe="te_current", what_if=["mx_rceil", "nvfp4_te"],
                              what_if_every=2, map_every=2, run_id="gpt-te")
    losses = train(model, 4, run, capture)
    with torch.no_grad():  # an evaluation forward is not recorded
        model.eval()
        model(*next(batches(9)))
        model.train()
    run.validation(3.5)
    assert run.close() == "gpt-te"
    s = fp8lab.Session(tmp_path / "s.h5")
    info = s.run("gpt-te")
    assert info["type"] == "training" and info["attrs"]["model"] == "pytorch"
    sites = info["attrs"]["sites"].split(",")
    # tied lm_head: one Linear, its weight is the embedding's
    assert sites == ["transformer.h.0.attn.c_attn", "transformer.h.0.attn.c_proj", "transformer.h.0.mlp.c_fc",
                     "transformer.h.0.mlp.c_proj", "transformer.h.1.attn.c_attn", "transformer.h.1.attn.c_proj",
                     "transformer.h.1.mlp.c_fc", "transformer.h.1.mlp.c_proj", "lm_head"]
    assert s.read("gpt-te", "sites/block").tolist() == [0, 0, 0, 0, 1, 1, 1, 1, -1]
    for site in sites:
        for operand in ("input", "kernel", "output_grad"):
            amax = s.read("gpt-te", "history/%s/%s/amax" % (site, operand))
            want = np.array(capture[(site, operand)], dtype=np.float32)
            assert amax.dtype == np.float32 and amax.shape == (4,)
            assert np.array_equal(amax.view(np.uint32), want.view(np.uint32)), (site, operand, amax, want)
            scale = s.read("gpt-te", "history/%s/%s/scale" % (site, operand))
            # TE Float8CurrentScaling: quant scale = fp8_max / amax in float32, dequant = its reciprocal;
            # fp8_max 448 (E4M3FN) forward, 57344 (E5M2) for the gradient.
            fmax = np.float32(57344.0 if operand == "output_grad" else 448.0)
            q = fmax / want
            assert np.array_equal(s.read("gpt-te", "history/%s/%s/quant_scale" % (site, operand)), q)
            assert np.array_equal(scale, np.float32(1.0) / q)
    assert np.array_equal(s.read("gpt-te", "training/loss"), np.array(losses, dtype=np.float32))
    assert info["metrics"]["final_val_loss"] == 3.5
    # what-if at every 2nd recorded step (the loop's length is not known in advance: no extra last one)
    assert s.read("gpt-te", "what_if/steps").tolist() == [0, 2]
    assert any(p.startswith("block_stats/lm_head/input/") for p in info["datasets"])
    assert any(p.startswith("what_if/mx_rceil/") for p in info["datasets"])


def test_every_n_and_block_recipe_and_cli_opens_it(tmp_path, cli):
    torch.manual_seed(1)
    model = GPT(layers=1)
    with fp8lab.torch.attach(model, tmp_path / "s.h5", recipe="te_mxfp8", every=2) as run:
        train(model, 5, run)
        assert run.recorded_steps == 3
    s = fp8lab.Session(tmp_path / "s.h5")
    rid = s.runs[0]
    assert rid == "torch-te-mxfp8"
    assert s.read(rid, "training/recorded_step").tolist() == [0, 2, 4]
    assert s.read(rid, "training/loss").shape == (5,)
    info = s.run(rid)
    assert info["attrs"]["recipe"] == "te_mxfp8" and info["attrs"]["record_every"] == 2
    # MXFP8's representative scale is a power of two (E8M0).
    sc = s.read(rid, "history/lm_head/input/scale")
    assert np.all(np.log2(sc) == np.round(np.log2(sc)))
    out = cli("inspect", tmp_path / "s.h5")
    assert rid in out.stdout
    # A second run of the same model under another recipe; decide lists both.
    torch.manual_seed(1)
    model = GPT(layers=1)
    with fp8lab.torch.attach(model, tmp_path / "s.h5", recipe="fp32", every=2) as run2:
        train(model, 5, run2)
        run2.validation(4.0)
    d = cli("decide", tmp_path / "s.h5", check=False)
    assert d.returncode in (0, 1), d.stderr
    assert "Traceback" not in d.stderr and "error" not in d.stderr.lower(), d.stderr


def test_bad_arguments():
    model = GPT(layers=1)
    with pytest.raises(ValueError, match="recipe: unknown recipe 'fp9'"):
        fp8lab.torch.attach(model, "/tmp/x.h5", recipe="fp9")
    with pytest.raises(ValueError, match="every"):
        fp8lab.torch.attach(model, "/tmp/x.h5", every=0)
    with pytest.raises(ValueError, match="what_if"):
        fp8lab.torch.attach(model, "/tmp/x.h5", what_if=["no_such_recipe"])
    with pytest.raises(TypeError, match="model: expected a torch.nn.Module"):
        fp8lab.torch.attach(object(), "/tmp/x.h5")
    with pytest.raises(ValueError, match="no torch.nn.Linear"):
        fp8lab.torch.attach(torch.nn.ReLU(), "/tmp/x.h5")
    r = fp8lab.torch.attach(model, "/tmp/never-written.h5")
    with pytest.raises(ValueError, match="run_id"):
        r._run.finish("/tmp/never-written.h5", "bad id/", "{}", False)


def test_weight_sharing_records_the_first_call(tmp_path):
    torch.manual_seed(2)
    lin = torch.nn.Linear(16, 16)
    model = torch.nn.Sequential(lin, torch.nn.Tanh(), lin, torch.nn.Tanh(), torch.nn.Linear(16, 4))
    first = {}

    def fwd(m, inp, out):
        if "x" not in first:
            first["x"] = inp[0].detach().abs().max().item()
            out.register_hook(lambda g: first.__setitem__("g", g.detach().abs().max().item()))
    h = lin.register_forward_hook(fwd)
    run = fp8lab.torch.attach(model, tmp_path / "s.h5", recipe="fp32", run_id="shared")
    loss = model(torch.randn(8, 16)).square().mean()
    loss.backward()
    run.step(loss)
    h.remove()
    run.close()
    s = fp8lab.Session(tmp_path / "s.h5")
    assert s.read("shared", "history/0/input/amax")[0] == np.float32(first["x"])
    assert s.read("shared", "history/0/output_grad/amax")[0] == np.float32(first["g"])
    assert s.run("shared")["attrs"]["repeated_calls"] == 1


def test_multihead_attention_and_empty_runs_warn(tmp_path):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Linear(16, 32)
            self.att = torch.nn.MultiheadAttention(32, 4, batch_first=True)
            self.head = torch.nn.Linear(32, 4)

        def forward(self, x):
            h = self.emb(x).unsqueeze(0)
            return self.head((h + self.att(h, h, h, need_weights=False)[0])[0])
    m = M()
    with pytest.warns(UserWarning, match="MultiheadAttention"):
        run = fp8lab.torch.attach(m, tmp_path / "s.h5", recipe="fp32", run_id="mha")
    loss = m(torch.randn(8, 16)).square().mean()
    loss.backward()
    run.step(loss)
    run.close()
    assert fp8lab.Session(tmp_path / "s.h5").run("mha")["attrs"]["sites"] == "emb,head"
    m.eval()
    run = fp8lab.torch.attach(m, tmp_path / "s.h5", recipe="fp32", run_id="eval")
    with torch.no_grad():
        m(torch.randn(8, 16))
    run.step()
    with pytest.warns(UserWarning, match="no training step was recorded"):
        run.close()


def test_output_checked_at_attach_and_a_failed_save_is_kept(tmp_path):
    model = GPT(layers=1)
    with pytest.raises(ValueError, match="path: the directory .* does not exist"):
        fp8lab.torch.attach(model, tmp_path / "missing" / "s.h5")
    with pytest.raises(TypeError, match="path: expected a file path"):
        fp8lab.torch.attach(model, 123)
    with pytest.raises(ValueError, match="run_id"):
        fp8lab.torch.attach(model, tmp_path / "s.h5", run_id="bad/id")
    (tmp_path / "notes.h5").write_text("not a session")
    with pytest.raises(ValueError, match="not an FP8 Lab session"):
        fp8lab.torch.attach(model, tmp_path / "notes.h5")
    with pytest.raises(TypeError, match="margin: expected an integer"):
        fp8lab.torch.attach(model, tmp_path / "s.h5", margin=2.5)
    sub = tmp_path / "sub"
    sub.mkdir()
    run = fp8lab.torch.attach(model, sub / "s.h5", recipe="te_current", run_id="kept")
    train(model, 2, run)
    sub.rmdir()
    with pytest.raises(ValueError, match="it is kept"):
        run.close()
    run.path = str(tmp_path / "s.h5")
    assert run.close() == "kept"
    assert fp8lab.Session(tmp_path / "s.h5").read("kept", "history/lm_head/input/amax").shape == (2,)
    with pytest.raises(ValueError, match="observed from a PyTorch model"):
        fp8lab.rerun(tmp_path / "s.h5", "kept")
