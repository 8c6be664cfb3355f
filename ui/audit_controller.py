"""The audit in progress: starts AuditThread (new, resumed or refetched run), shows its progress
in the status bar, refreshes the open run while it runs, cancels it, and stops it when the window
closes (keeping what was judged, so the run can be resumed)."""
from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QProgressBar

from sourcecheckup.config import RunConfig
from sourcecheckup.events import ProgressEvent, RunProgress, time_left_text
from sourcecheckup.judges import validate_judge_spec

from .elide import ElidedLabel
from .host import Host
from .worker import AuditThread

LIVE_REFRESH_MS = 1500
RUNNING, CANCELLING, IDLE = "running", "cancelling", "idle"
FORCE_CLOSE_MS = 15_000     # a judge that never returns must not keep the window open
BAR_STEPS = 1000            # the bar shows the share of the run done (RunProgress), in tenths of a percent


class AuditController(QObject):
    state_changed = Signal(str)         # RUNNING, CANCELLING or IDLE
    audit_finished = Signal(str, str)   # run id, status

    def __init__(self, host: Host) -> None:
        super().__init__(host.window())
        self.host = host
        self.results = host.results
        self.worker: AuditThread | None = None
        self.closing = False
        self._started_at = 0.0
        self._progress = RunProgress(0.0)
        self._next_run_name = ""   # the name typed for the run being started
        # the status bar's progress line and bar (the window places them)
        self.progress_label = ElidedLabel(min_chars=12)
        self.progress_label.setMaximumWidth(720)
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(260)
        self.progress_bar.setVisible(False)
        self.live_timer = QTimer(self)
        self.live_timer.setInterval(LIVE_REFRESH_MS)
        self.live_timer.timeout.connect(self._live_refresh)

    # ------------------------------------------------------------------------ starting
    def start_audit(self) -> bool:
        """Audit the pending batch, else the pasted answer, with the judges in Settings."""
        if self.worker is not None:
            return False
        inputs = self.results.input
        got = inputs.collect_inputs()
        if got is None:
            return False
        result, label = got
        if not result.responses:
            self.host.warn("No answers found", "; ".join(f"{s.origin}: {s.problem}" for s in result.skipped) or
                            "The input held no answers.")
            return False
        if not self.judges_ready(self.host.settings.judges):
            return False
        self._next_run_name = inputs.run_name_edit.text().strip()
        # more than one answer is a batch: robots.txt is respected, as the CLI does
        config = self.host.settings.run_config(batch=len(result.responses) > 1)
        self._start(AuditThread(self.host.db_path, config, responses=result.responses,
                                skipped=result.skipped, label=label, parent=self.host.window()))
        inputs.run_name_edit.clear()
        inputs.clear_batch()
        return True

    def start_demo(self) -> bool:
        """Audit the bundled sample answers offline (the engine's demo: sourcecheckup.demo), as
        ``sourcecheckup demo`` does, whatever the judges and source pack in Settings."""
        if self.worker is not None:
            return False
        from sourcecheckup import demo

        try:
            loaded, config = demo.load_answers(), demo.run_config()
        except Exception as exc:   # a bundle or install without its samples
            self.host.warn("Cannot start the demo", f"The bundled sample cannot be read: {exc}")
            return False
        self._next_run_name = demo.RUN_NAME
        self._start(AuditThread(self.host.db_path, config, responses=loaded.responses, skipped=loaded.skipped,
                                label=str(demo.answers_dir()), parent=self.host.window()))
        return True

    def judge_problems(self, judges: list[str]) -> list[str]:
        return [p for p in (validate_judge_spec(j) for j in judges) if p]

    def judges_ready(self, judges: list[str]) -> bool:
        """Check the judge specs (and their API keys) before a run starts; say how to fix them."""
        problems = self.judge_problems(judges)
        if problems:
            self.host.warn("Judge settings need fixing", "\n".join(problems) +
                            "\n\nFix them in Settings → Judges (File → Settings…), then start again.")
        return not problems

    def resume_run(self, run_id: str) -> bool:
        """Resume a run with its stored settings; when its judge settings cannot run (a bad spec, a
        missing key) it resumes with the judges in Settings, once those are valid."""
        if self.worker is not None:
            return False
        run = self.host.store.get_run(run_id)
        config = RunConfig.from_dict(run.config)
        replace = False
        if self.judge_problems(config.judges):
            if not self.judges_ready(self.host.settings.judges):
                return False
            config.judges = list(self.host.settings.judges)
            replace = True
            self.host.show_status(f"Resuming run {run.id} with the judges in Settings: {', '.join(config.judges)}")
        self.results.open_run(run.id)
        self._start(AuditThread(self.host.db_path, config, resume_run=run.id, replace_config=replace,
                                parent=self.host.window()))
        return True

    def refetch_run(self, run_id: str) -> bool:
        """"Fetch sources again": a new run over the run's answers with every source fetched anew
        (refetch=True) under the current fetch settings, through the Audit worker.

        The one place the app asks for a refetch, so it can switch to an engine call made for it."""
        if self.worker is not None:
            return False
        store, settings = self.host.store, self.host.settings
        run = store.get_run(run_id)
        responses = [row.response for row in store.responses(run.id)]
        if not responses:
            self.host.warn("Nothing to fetch", f"Run {run.id} holds no answers.")
            return False
        config = RunConfig.from_dict(run.config)
        if self.judge_problems(config.judges):
            if not self.judges_ready(settings.judges):
                return False
            config.judges = list(settings.judges)
        # hosts allowed (or a source pack set) since then; a batch respects robots.txt, as the CLI does
        config.fetch = settings.fetch_options(batch=len(responses) > 1)
        config.refetch = True
        self.host.show_status(f"Fetching the sources of run {run.id} again")
        self._start(AuditThread(self.host.db_path, config, responses=responses,
                                label=f"{run.input} (sources fetched again from run {run.id})", parent=self.host.window()))
        return True

    def _start(self, worker: AuditThread) -> None:
        self.worker = worker
        preload = getattr(self.host, "model_preload", None)
        if preload is not None:   # the audit pays what is left of the warm-up itself, without a rival thread
            preload.stand_down()
        worker.progress.connect(self._on_progress)
        worker.run_started.connect(self._on_run_started)
        worker.loading.connect(self.progress_label.setText)
        worker.done.connect(self._on_done)
        self.state_changed.emit(RUNNING)
        self.progress_bar.setVisible(True)
        self.progress_bar.setRange(0, 0)
        self.progress_label.setText("Starting…")
        self._started_at = time.monotonic()
        self._progress = RunProgress(self._started_at)
        self.live_timer.start()
        worker.start()

    # ------------------------------------------------------------------------ while it runs
    def _on_run_started(self, run_id: str) -> None:
        if self._next_run_name:
            self.host.store.set_run_label(run_id, name=self._next_run_name)
            self._next_run_name = ""
        self.results.open_run(run_id)
        self.host.refresh_runs()

    def _on_progress(self, ev: ProgressEvent) -> None:
        self.results.stale = True
        # the bar counts all the work left (sources, verdicts, answers; see RunProgress); the label counts
        # pairs and verdicts apart
        self._progress.update(ev)
        self.progress_bar.setRange(0, BAR_STEPS)
        self.progress_bar.setValue(round(self._progress.fraction(ev) * BAR_STEPS))
        now = time.monotonic()
        elapsed = now - self._started_at
        eta = ""
        left = self._progress.seconds_left(ev, now)
        if left is not None:
            eta = f" · {time_left_text(left)}"
        work_total, work_done = ((ev.verdicts_total, ev.verdicts_done) if ev.verdicts_total
                                 else (ev.pairs_total, ev.pairs_done))
        if work_total and work_done and work_done < work_total:
            cost = self.results.cost_so_far()
            if cost:   # extrapolated from the verdicts given so far
                eta += f" · est. cost ${cost / work_done * work_total:.2f}"
        verdicts = (f" · verdicts {ev.verdicts_done}/{ev.verdicts_total}"
                    if ev.verdicts_total and ev.verdicts_total != ev.pairs_total else "")
        self.progress_label.setText(
            f"Responses {ev.responses_done}/{ev.responses_total} · sources fetched {ev.sources_done}/"
            f"{ev.sources_total} · pairs judged {ev.pairs_done}/{ev.pairs_total}{verdicts} · unreadable sources "
            f"{ev.fetch_failures} · judge errors {ev.judge_errors} · {elapsed:.0f} s{eta}")

    def _live_refresh(self) -> None:
        # a big run takes a while to load: refresh less often so the engine keeps the CPU
        page = self.results
        if page.stale and page.run_id and not self.host.db.busy("run") and \
                time.monotonic() - page.last_load_at >= 4 * page.last_load_s:
            page.reload_run()

    def cancel_audit(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.state_changed.emit(CANCELLING)
            self.progress_label.setText("Cancelling: finishing the pairs in flight…")

    def _on_done(self, run_id: str, status: str, message: str) -> None:
        worker = self.worker
        self.worker = None
        if worker is not None:
            worker.wait(5000)
            worker.deleteLater()
        self.live_timer.stop()
        self.state_changed.emit(IDLE)
        self.progress_bar.setVisible(False)
        hint = " It can be resumed from the Runs tab." if status in ("cancelled", "failed") else ""
        self.progress_label.setText(f"Run {run_id} {status}" + (f": {message}" if message else "") + "." + hint)
        self.audit_finished.emit(run_id, status)
        if self.closing:
            self.host.close()
            return
        if run_id:
            self.results.run_id = run_id
            self.results.reload_run()
        self.host.refresh_runs()

    # ------------------------------------------------------------------------ closing
    def may_close(self) -> bool:
        """True when no audit runs. Otherwise, once the user agrees, cancel it and close the window
        when it has stopped (or after FORCE_CLOSE_MS); False until then."""
        if self.worker is None:
            self.live_timer.stop()
            return True
        if not self.closing:
            if not self.host.confirm("Audit running", "An audit is running. Stop it and close? Everything judged "
                                     "so far is kept, and the run can be resumed later."):
                return False
            self.closing = True
            self.cancel_audit()
            QTimer.singleShot(FORCE_CLOSE_MS, self._force_close)
        return False

    def _force_close(self) -> None:
        if self.worker is not None:
            # the thread stays parented to the window until it ends; the window may go now
            self.worker.done.disconnect()
            self._abandoned = self.worker
            self.worker = None
            self.host.close()
