"""`Think`: an opinionated chat agent. Subclass it and override `get_model()`.

    class Assistant(Think):
        def get_model(self):
            return "openai:gpt-4.1-mini"

        def get_tools(self):
            return [get_weather]

The class holds defaults, override points and wiring; each stage of a turn lives in its own
folder (see `think.turns.runner` for the pipeline).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from think import observe
from think.actions import MIGRATIONS as ACTION_MIGRATIONS
from think.actions.api import ActionsAPI
from think.actions.approvals import ApprovalsAPI
from think.attachments import MIGRATIONS as ATTACHMENT_MIGRATIONS
from think.attachments import stored_attachments
from think.context.blocks import WhenChanged
from think.context.convert import TRUNCATION_STEP
from think.context.history import ModelHistory
from think.context.overflow import ChatErrorClass, ContextOverflowPolicy, default_context_overflow_classifier
from think.context.prompt import DEFAULT_SYSTEM_PROMPT
from think.errors import ConfigurationError
from think.extensions.api import ExtensionAPI
from think.extensions.store import MIGRATIONS as EXTENSION_MIGRATIONS
from think.hooks import (
    ChatErrorContext,
    StepConfig,
    StepContext,
    StepRecord,
    ToolCall,
    ToolCallContext,
    ToolCallResultContext,
    ToolDecision,
    TurnConfig,
    TurnContext,
)
from think.mcp import MCPAPI
from think.mcp import MIGRATIONS as MCP_MIGRATIONS
from think.messages import JSONObject, Message
from think.models.base import Model
from think.recovery import MIGRATIONS as RECOVERY_MIGRATIONS
from think.recovery import ChatRecovery, ChatRecoveryPolicy, ExhaustedContext, RecoveryContext, RecoveryDecision
from think.runtime.agent import Agent
from think.runtime.rpc import callable as rpc_callable
from think.scheduling.tasks import ScheduledTasks, ScheduledTaskSpec
from think.sessions.eviction import MediaEviction, MediaEvictor
from think.sessions.manager import Sessions
from think.sessions.session import DEFAULT_HYDRATION_BYTES, Session
from think.sessions.session import MIGRATIONS as SESSION_MIGRATIONS
from think.skills.library import SkillLibrary, SkillScriptRunner
from think.skills.skill import SkillSources
from think.stream.fanout import Fanout, TranscriptChanged
from think.stream.resumable import MIGRATIONS as STREAM_MIGRATIONS
from think.stream.resumable import ResumableStreams
from think.stream.session_streams import MIGRATIONS as SESSION_STREAM_MIGRATIONS
from think.stream.session_streams import SessionStreams
from think.subagents.api import SubAgentAPI
from think.subagents.children import MIGRATIONS as SUB_AGENT_MIGRATIONS
from think.subagents.children import SubAgents
from think.subagents.runs import MIGRATIONS as AGENT_TOOL_RUN_MIGRATIONS
from think.subagents.runs import AgentToolRuns
from think.submissions.api import SubmissionAPI
from think.submissions.store import MIGRATIONS as SUBMISSION_MIGRATIONS
from think.submissions.submissions import Submissions
from think.tools.execute.api import ExecutionAPI
from think.tools.execute.store import MIGRATIONS as EXECUTE_MIGRATIONS
from think.tools.tool import Tool, as_tool_map
from think.turns.api import TurnAPI, in_turn
from think.turns.branches import BranchAPI
from think.turns.callbacks import MessageLike, to_message
from think.turns.cancel import Cancellations
from think.turns.concurrency import MessageConcurrency
from think.turns.continuation import AutoContinuation, forget_request
from think.turns.interrupted import recover_interrupted_streams
from think.turns.queue import TurnQueue
from think.turns.steer import Steering
from think.turns.tool_results import ToolUpdates
from think.turns.trust import tool_kinds
from think.turns.turn import TurnResult
from think.usage.schema import MIGRATIONS as USAGE_MIGRATIONS
from think.workspace.attachments import DEFAULT_MAX_ATTACHMENT_BYTES
from think.workspace.preview import DEFAULT_PREVIEW_BYTES, preview_file
from think.workspace.tools import create_workspace_tools
from think.workspace.workspace import MIGRATIONS as WORKSPACE_MIGRATIONS
from think.workspace.workspace import Workspace

if TYPE_CHECKING:
    from think.sandbox.bash import BashOptions
    from think.usage.ledger import UsageLedger, UsageTotals

_MODEL_CLASSES: set[type] = set()
"""Classes whose instances passed the `Model` protocol check (`Think.resolve_model`)."""


class Think(TurnAPI, BranchAPI, SubmissionAPI, SubAgentAPI, MCPAPI, ApprovalsAPI, ActionsAPI, ExecutionAPI,
            ExtensionAPI, Agent):
    """An opinionated chat agent. Subclass it and override `get_model()`."""

    max_steps: int = 10
    """Most model ⇄ tool rounds in one turn."""
    send_reasoning: bool = True
    """Stream the model's reasoning to clients."""
    max_persisted_messages: int | None = None
    """Keep at most this many messages of the conversation in storage (None: all)."""
    truncation_step: int = TRUNCATION_STEP
    """Older messages' long texts and tool outputs are truncated for the model; the cutoff moves
    by this many messages at once, so a provider's prompt cache keeps hitting between moves."""
    media_eviction: MediaEviction | None = MediaEviction()
    """Aged images move to workspace files, a marker in their place (`think.sessions.eviction`)."""
    hydration_byte_budget: int = DEFAULT_HYDRATION_BYTES
    """Stored bytes of a transcript kept in memory: its newest messages, never fewer than 4."""
    context_overflow: ContextOverflowPolicy = ContextOverflowPolicy()
    """Compact and retry when a prompt does not fit the model (needs `session.on_compaction`)."""
    workspace_bash: bool | BashOptions = True
    """Give the model the sandboxed `bash` tool over the workspace; False removes it, a
    `think.sandbox.bash.BashOptions` sets its limits (timeout, network allowlist, …)."""
    fetch_tools: Mapping[str, Tool] | None = None
    """Read-only web access for the model: `think.tools.fetch.create_fetch_tools(allowlist=[…])`
    (`fetch_url`, `fetch_<target>`); None (the default) gives none."""
    browser_tools: Mapping[str, Tool] | None = None
    """A real headless browser for the model: `think.tools.browser.create_browser_tools(allowlist=[…])`
    (`browser_markdown`, `browser_execute`, …); None (the default) gives none."""
    max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES
    """The largest file a user message may attach (stored in the workspace under `/attachments/`;
    see `think.workspace.attachments`)."""
    welcome: str | None = None
    """What the web UI says on an empty conversation (None: which agent and model it is)."""
    suggestions: Sequence[str] = ()
    """Prompts the web UI offers on an empty conversation (served by `GET /_think/info`)."""
    message_concurrency: MessageConcurrency = "queue"
    """What a chat message sent while a turn runs does: `"queue"`, `"latest"`, `"merge"`, `"drop"`, `"steer"`
    or `{"strategy": "debounce", "debounce": 0.75}` (seconds; see `think.turns.concurrency`)."""
    reserved_metadata_keys: tuple[str, ...] = ()
    """Message metadata keys clients may not set (stripped from their messages), besides the
    server's own `channel`, `turnMetadata` and `usage` (see `think.turns.trust`)."""
    chat_recovery: ChatRecoveryPolicy = ChatRecoveryPolicy()
    """Budgets for finishing turns a crash or a stalled stream interrupted (see `think.recovery`)."""
    chat_stream_stall_timeout: float = 0.0
    """Recover a turn whose stream gave no chunk for this many seconds (tool time included); 0: off."""
    chat_stream_stall_timeout_ms: int = 0
    """Deprecated: `chat_stream_stall_timeout` in milliseconds (used, with a `DeprecationWarning`)."""

    _framework_migrations: ClassVar[tuple[Any, ...]] = (*SESSION_MIGRATIONS, *WORKSPACE_MIGRATIONS,
                                                        *STREAM_MIGRATIONS, *SESSION_STREAM_MIGRATIONS,
                                                        *SUBMISSION_MIGRATIONS,
                                                        *SUB_AGENT_MIGRATIONS, *AGENT_TOOL_RUN_MIGRATIONS,
                                                        *ATTACHMENT_MIGRATIONS, *RECOVERY_MIGRATIONS,
                                                        *MCP_MIGRATIONS, *EXECUTE_MIGRATIONS,
                                                        *USAGE_MIGRATIONS, *ACTION_MIGRATIONS, *EXTENSION_MIGRATIONS)

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        if self.chat_stream_stall_timeout_ms and not self.chat_stream_stall_timeout:
            warnings.warn(f"{type(self).__name__}.chat_stream_stall_timeout_ms is deprecated; set "
                          "chat_stream_stall_timeout in seconds", DeprecationWarning, stacklevel=2)
            self.chat_stream_stall_timeout = self.chat_stream_stall_timeout_ms / 1000
        self.fanout = Fanout()
        self.streams = ResumableStreams(self.db)
        """Every chunk of the chat's turns, buffered for clients that reconnect mid-turn."""
        self.fanout.subscribe(self.streams.on_event)  # first, so a chunk is buffered before it is sent
        sanitize = self.on_sanitize_message if type(self).on_sanitize_message is not Think.on_sanitize_message else None
        self.sessions = Sessions(self.db, fanout=self.fanout, configure=self.configure_session,
                                 max_persisted_messages=self.max_persisted_messages,
                                 hydration_byte_budget=self.hydration_byte_budget, sanitize=sanitize)
        self.session: Session = self.sessions.root
        """The root session: the chat transcript clients see."""
        self.session_streams = SessionStreams(self.db)
        """The running turn's chunks of every other session (`HarnessSession.in_flight`)."""
        self.session_streams.bind(self.sessions)
        self.skills = SkillLibrary(self.get_skills, self.get_skill_script_runner)
        self.workspace = Workspace(self.db)
        self.media_evictor = MediaEvictor(self.workspace)
        self._workspace_tools: tuple[tuple[Any, Any], dict[str, Tool]] | None = None
        self.model_history = ModelHistory(self.truncation_step)
        self.turn_queue = TurnQueue()
        self.cancellations = Cancellations()
        self.steering = Steering(self.cancellations.cancelled_early)
        """The running turn and the user messages steered into it (`think.turns.steer`)."""
        self.tool_updates = ToolUpdates(self)
        self.continuations = AutoContinuation(self)
        self._turns_running = 0
        self.submissions = Submissions(self)
        self.sub_agents = SubAgents(self, self.db)
        self.agent_tool_runs = AgentToolRuns(self.db)
        """Recent child runs' `agent-tool-event` frames, replayed to clients that connect later."""
        self.fanout.subscribe(self.agent_tool_runs.on_event)
        self.scheduled_tasks = ScheduledTasks(self)
        self.recovery = ChatRecovery(self)
        """Durable fibers of running turns and the recovery of interrupted ones."""
        self.mcp = self._mcp_clients(self.db)
        """The agent's MCP servers and their connections (see `think.mcp`)."""
        self._usage_ledger: UsageLedger | None = None

    # ---- override points -------------------------------------------------------------------------

    def get_model(self) -> Model | str:
        """The model for this agent: a `Model`, or an id such as `"openai:gpt-4.1-mini"`.

        The default picks, in order: `THINK_MODEL`, a provider key in the environment, a local
        Ollama server, the `local` extra, and finally the offline demo model.
        """
        from think.models.default import default_model

        return default_model()

    def get_system_prompt(self) -> str:
        """The system prompt, used when the session has no context blocks (which make their own)."""
        return DEFAULT_SYSTEM_PROMPT

    def configure_session(self, session: Session) -> Session:
        """Configure each session once, before its first turn: context blocks, compaction, a cached
        prompt (`session.with_context(...)`, `.on_compaction(...)`, …). Return the session."""
        return session

    def get_skills(self) -> SkillSources | None:
        """Skills for the model: `Skill`s, skill folders (paths) or sources (see `think.skills`)."""
        return None

    def get_skill_script_runner(self) -> SkillScriptRunner | None:
        """What runs skill scripts (`run_skill_script`): by default the bubblewrap sandbox when this
        machine has it (`think.skills.sandbox`); None means scripts cannot run here."""
        from think.skills.sandbox import sandbox_runner_if_available

        return sandbox_runner_if_available()

    def classify_chat_error(self, error: BaseException | str) -> ChatErrorClass | None:
        """Classify a failed model call: "context_overflow" makes the turn compact and retry;
        "transient" and "rate_limit" send it into recovery (`chat_recovery`: retried after 1 s,
        doubling to 30 s, within its attempt budget) instead of failing it."""
        return default_context_overflow_classifier(error)

    def get_scheduled_tasks(self) -> Mapping[str, ScheduledTaskSpec | Mapping[str, Any]] | None:
        """Recurring tasks, by id: `{"digest": ScheduledTaskSpec(schedule="every day at 09:00",
        prompt="…")}`; reconciled into the schedules on every start (see `think.scheduling.tasks`)."""
        return None

    def get_tools(self) -> Sequence[Tool] | Mapping[str, Tool] | None:
        """Tools for every turn: a list of `Tool`s (see `@tool`) or a mapping of name to tool."""
        return None

    # ---- hooks (do-nothing defaults) -------------------------------------------------------------

    async def before_turn(self, ctx: TurnContext) -> TurnConfig | None:
        return None

    async def before_step(self, ctx: StepContext) -> StepConfig | None:
        return None

    async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None:
        return None

    async def after_tool_call(self, ctx: ToolCallResultContext) -> None:
        return None

    async def tool_approval(self, call: ToolCall) -> bool:
        """True to ask a person before running this call, on top of the tool's own `needs_approval`."""
        return False

    async def on_step_finish(self, step: StepRecord) -> None:
        return None

    async def on_chunk(self, chunk: JSONObject) -> None:
        return None

    def on_sanitize_message(self, message: Message) -> Message | None:
        """Every message before it is stored, the client's and the server's (user messages, replies,
        tool answers, `add_messages`): change its parts or metadata (redact, strip) in place or
        return a new one; None keeps it. It gets a copy; the id and role must stay (else
        `TypeError`, and nothing is written). Runs before the built-in hygiene and size cap."""
        return message

    async def on_chat_response(self, result: TurnResult) -> None:
        """After a turn that streamed has ended and its reply is persisted."""
        return None

    async def on_chat_recovery(self, ctx: RecoveryContext) -> RecoveryDecision | dict[str, bool] | None:
        """A turn was interrupted (a crash, a stalled stream) and is about to be recovered: return
        `RecoveryDecision(persist=…, continue_=…)` (or `{"persist": …, "continue": …}`); None: both."""
        return None

    async def on_exhausted(self, ctx: ExhaustedContext) -> None:
        """An interrupted turn is given up (`ctx.reason`); clients get `ctx.terminal_message`."""
        return None

    def stash(self, data: Any) -> None:
        """Keep JSON `data` with the running turn; a recovery of it gets it as `recovery_data`."""
        self.recovery.stash(data)

    async def on_chat_error(self, error: BaseException, ctx: ChatErrorContext) -> BaseException | str | None:
        """A turn failed (`ctx.stage`, `ctx.messages_persisted`); return a replacement error (its
        text is what clients see), or None to keep this one."""
        return error

    # ---- models and tools ------------------------------------------------------------------------

    def resolve_model(self, model: Model | str) -> Model:
        if isinstance(model, str):
            from think.models.registry import resolve_model

            return resolve_model(model)
        if model.__class__ in _MODEL_CLASSES:  # checked once per class: a Protocol check is slow
            return model
        if isinstance(model, Model):
            if len(_MODEL_CLASSES) < 256:
                _MODEL_CLASSES.add(model.__class__)
            return model
        raise ConfigurationError(f"get_model() returned {type(model).__name__}; return a Model or a model id string")

    def all_tools(self) -> dict[str, Tool]:
        """Every server tool of a turn, before `before_turn` adjusts them: the workspace tools
        (`read`, `write`, `edit`, `list`, `find`, `grep`, `delete`, `bash`), then `fetch_tools`,
        `browser_tools`, then `get_tools()`, then `get_actions()` (`think.actions`); later ones replace
        earlier tools of the same name."""
        return {**self.workspace_tools(), **as_tool_map(self.fetch_tools), **as_tool_map(self.browser_tools),
                **as_tool_map(self.get_tools()), **self._action_tools()}

    def workspace_tools(self) -> dict[str, Tool]:
        """The file tools over `self.workspace` (built once, rebuilt if it or `workspace_bash` change)."""
        key = (self.workspace, self.workspace_bash)
        if self._workspace_tools is None or self._workspace_tools[0] != key:
            self._workspace_tools = key, create_workspace_tools(self.workspace, bash=self.workspace_bash)
        return self._workspace_tools[1]

    @rpc_callable(description="The entries of a workspace directory, as FileInfo objects.")
    async def list_workspace(self, path: str = "/") -> list[dict[str, Any]]:
        """The entries of a workspace directory (directories first), for clients' file panels."""
        return [entry.to_json() for entry in await self.workspace.list(path)]

    @rpc_callable(description="A workspace file: FileInfo and its text content (binary or large files: a note).")
    async def read_workspace_file(self, path: str, max_bytes: int = DEFAULT_PREVIEW_BYTES) -> dict[str, Any]:
        """A workspace file for clients' file panels: its FileInfo JSON plus `content` (text), or
        `content: null` with `reason` and `note` for binary files and files over `max_bytes`
        (at most 4 MB). Missing paths and directories are errors (see `preview_file`)."""
        return await preview_file(self.workspace, path, max_bytes=max_bytes)

    @rpc_callable(description="The names of the tools this agent runs itself (never a client's to run).")
    def server_tools(self) -> list[str]:
        """Names of the tools the server executes (workspace, `get_tools()`, context blocks,
        skills; `think.turns.trust.tool_kinds`): a client never runs a call of these, and the
        web UI never offers to."""
        return sorted(tool_kinds(self, ()).server)

    # ---- lifecycle -------------------------------------------------------------------------------

    async def _framework_start(self) -> None:
        await super()._framework_start()
        self.sessions.configure(self.session)
        await self._start_extensions()  # static ones in order, then the stored ones
        if self._blank:  # a blank database (just made from the schema image) has nothing of these
            self.streams.blank()
        else:
            self.mcp.restore(self.mcp_restore_delay)  # stored MCP servers connect in the background, turns first
            await recover_interrupted_streams(self)  # a turn the last process did not finish
            await self.recovery.start()  # …is retried or continued, within its budget
            self._resume_paused_work()  # an approved action or execution the last process was running
        self.scheduled_tasks.reconcile()
        if not self._blank:
            self.submissions.start()  # recover what a dead process left running, drain what waits
        observe.agent_active(type(self).kebab_name(), 1)

    async def _hibernate(self) -> None:
        observe.agent_active(type(self).kebab_name(), -1)
        await self.mcp.stop()
        await self.submissions.stop()
        await self.recovery.stop()
        self.agent_tool_runs.flush()
        await super()._hibernate()

    def _let_go(self) -> None:
        self.sessions.forget_caches()
        self.model_history.clear()

    # ---- configuration -------------------------------------------------------------------------

    def configure(self, config: Any) -> None:
        """Persist a JSON-serializable configuration object for this instance."""
        self.kv_set("_think_config", {"value": config})

    def get_config(self) -> Any:
        """The last `configure()` value, or None."""
        stored = self.kv_get("_think_config")
        return stored["value"] if stored else None

    # ---- messages --------------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The live transcript (active branch). Do not modify; see `get_messages()`."""
        return self.session.history()

    def get_messages(self) -> list[Message]:
        """A copy of the transcript."""
        return [m.copy_deep() for m in self.session.history()]

    async def add_messages(self, messages: Sequence[MessageLike], *, parent_id: str | None = None,
                           mode: Literal["append", "upsert"] = "append", session: str = "",
                           broadcast: bool = True) -> list[Message]:
        """Write messages without a turn (safe inside tools). See `Session.add_messages`.

        Clients of the session see the new transcript unless `broadcast=False` or a turn is running.
        """
        target = self.sessions.session(session)
        stored = target.add_messages([to_message(m) for m in messages], parent_id=parent_id, mode=mode)
        if broadcast and not in_turn(self):
            await target.fanout.publish(TranscriptChanged(tuple(target.history())))
            await target.announce()
        return stored

    async def clear_messages(self) -> None:
        """Cancel every turn, make queued turns stale and delete the conversation."""
        self.turn_queue.reset()
        self.cancellations.cancel_all()
        self.continuations.reset()
        self.session.clear()
        self.streams.clear()
        self.recovery.clear()
        self.agent_tool_runs.clear()
        forget_request(self)
        await self.fanout.publish(TranscriptChanged(()))
        await self.submissions.skip_pending()

    async def add_context(self, label: str, *, content: str | None = None, description: str | None = None,
                          max_tokens: int | None = None, provider: Any = None, session: str = "",
                          when_changed: WhenChanged = "rewrite") -> None:
        """Add a context block to a session's system prompt while the agent runs (from the next turn;
        `content` fills a writable block). For this process only: blocks that must outlive a
        restart belong in `configure_session`. See `think.context.blocks`."""
        blocks = self.sessions.session(session).context
        blocks.add(label, description=description, max_tokens=max_tokens, provider=provider,
                   when_changed=when_changed)
        try:
            if content is not None:
                await blocks.replace(label, content)
        except BaseException:
            blocks.remove(label)  # all or nothing: a content that does not fit adds no block
            raise
        await blocks.blocks_changed()

    async def remove_context(self, label: str, *, session: str = "") -> None:
        """Remove a context block (added here or in `configure_session`) from the next turn on."""
        blocks = self.sessions.session(session).context
        blocks.remove(label)
        await blocks.blocks_changed()

    # ---- turns -----------------------------------------------------------------------------------

    def is_busy(self) -> bool:
        return (self._turns_running > 0 or self.turn_queue.busy or self.continuations.busy or self.submissions.busy
                or self.recovery.busy)

    @property
    def usage_ledger(self) -> UsageLedger:
        """Every finished model call's tokens (see `think.usage`)."""
        if self._usage_ledger is None:
            from think.usage.ledger import UsageLedger

            self._usage_ledger = UsageLedger(self.db)
        return self._usage_ledger

    def usage(self, since: datetime | float | None = None) -> UsageTotals:
        """Tokens (and cost, where every model's price is known) of this agent's model calls since
        `since` (a datetime or epoch seconds; default: ever), from its usage ledger."""
        return self.usage_ledger.totals(since)

    def reply_attachments(self, request_id: str | None = None) -> list[JSONObject]:
        """The reply attachments of a turn (default: the newest turn that has any); see
        `think.attachments`."""
        return stored_attachments(self.db, request_id)
