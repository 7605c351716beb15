"""A local job's checkpoints and retries: a failed trainer starts again from the last checkpoint it wrote, the run
shows the retry at that checkpoint's step, and ``run.checkpoints()`` / ``run.checkpoint(step)`` find them."""

from __future__ import annotations

from tau_collector.expstore import StoreReader, open_store
from taunotebook.submission import submit

TRAIN = """\
import json, os, sys, time
resume = os.environ.get("TAU_RESUME_FROM")
os.makedirs("ckpt", exist_ok=True)
start = int(os.environ["TAU_RESUME_STEP"]) + 1 if resume else 0
for step in range(start, 12):
    print(json.dumps({"_step": step, "_timestamp": time.time(), "loss": 1.0 / (step + 1)}), flush=True)
    if step == 5 and not resume:
        with open("ckpt/ckpt-5.pt", "wb") as fh:
            fh.write(b"w" * 5)
    if step == 8 and not resume:
        sys.exit(3)  # crashes after its checkpoint
print("resumed from", resume, "step", os.environ.get("TAU_RESUME_STEP"), "attempt",
      os.environ.get("TAU_RETRY_ATTEMPT"), "of", os.environ.get("TAU_RETRY_MAX"), flush=True)
"""


def test_a_failed_local_job_is_retried_from_its_last_checkpoint(tau_home, tmp_path):
    run = submit(code=TRAIN, name="resume", cwd=tmp_path, retries=2, checkpoint_path="ckpt")
    assert run.record["resources"] == {"retries": 2, "checkpoint_path": "ckpt"}
    assert run.wait(180) == "succeeded"
    checkpoint = tmp_path / "ckpt" / "ckpt-5.pt"
    assert f"resumed from {checkpoint} step 5 attempt 1 of 2" in run.logs()

    [saved] = run.checkpoints()
    assert (saved.step, saved.uri, saved.size_bytes, saved.deleted) == (5, str(checkpoint), 5, False)
    assert saved.digest.startswith("sha256:")
    assert run.checkpoint(11) == saved

    reader = StoreReader(open_store(tau_home / "store"))
    [retry] = reader.run_events(run.run_id, type="retry")
    assert retry.payload == {"attempt": 1, "max_retries": 2, "exit_code": 3, "step": 5,
                             "resume_from": str(checkpoint)}
    assert retry.message == (f"retry 1/2 after the trainer exited with code 3; resuming from {checkpoint} "
                             "(step 5)")
    stored = reader.run(run.run_id)
    assert stored.tags["tau.status.checkpoint_uri"] == str(checkpoint)  # the terminal status names it
    with run.portal() as client:
        assert [r.step for r in client.checkpoints(run.run_id).retries] == [5]


def test_checkpoints_glob_registers_step_directories_without_retries(tau_home, tmp_path):
    code = ("import os, json, time\n"
            "for step in (10, 20):\n"
            "    os.makedirs(f'out/step_{step}', exist_ok=True)\n"
            "    open(f'out/step_{step}/model.bin', 'wb').write(b'm' * step)\n"
            "    print(json.dumps({'_step': step, '_timestamp': time.time(), 'loss': 1.0}), flush=True)\n")
    run = submit(code=code, name="dirs", cwd=tmp_path, checkpoints="out/step_*")
    assert run.wait(180) == "succeeded"
    assert [(c.step, c.size_bytes) for c in run.checkpoints()] == [(10, 10), (20, 20)]
    assert run.checkpoint(15).step == 10
