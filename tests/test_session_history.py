"""The context budget: the estimate and its calibration, refusals for length, and compaction (stubs, then a
summary), driven by a scripted model that records every request it is sent."""

import copy
import random

import pytest

from harness.common.counting import MESSAGE_OVERHEAD
from harness.common.seam_types import ChatError, Reply
from harness.history import compaction
from harness.history import session_history as context_module
from harness.history.budget import Budget, stated_prompt, window_refusal
from harness.history.compaction import SUMMARY_ACK, SUMMARY_HEAD, SUMMARY_PROMPT
from harness.history.session_history import SessionHistory, fit_outputs
from harness.history.transcript import Transcript, load
from harness.model.session_model import SessionModel
from tools import CallResult

SYSTEM = {"role": "system", "content": "SYSTEM PROMPT " * 20}


@pytest.fixture(autouse=True)
def plain_results(monkeypatch):
    """Results rendered in a plain stand-in for prompt.py's format (which draws random markers), so stubs can
    be checked byte for byte; what is tested is that the history renders (results, and their stubs) through
    these two functions."""
    for module in (context_module, compaction):
        monkeypatch.setattr(module, "render_result", lambda name, ok, output: f"[{name} {ok}]\n{output}")
        monkeypatch.setattr(module, "render_results", lambda results, notes: "\n".join(notes + results))


class Model:
    """Answers every request (turns and summaries) and keeps a copy of each; `refuse(request)` may return
    a ChatError to raise instead."""

    def __init__(self, refuse=None, usage=None):
        self.seen: list[list[dict]] = []
        self.refuse = refuse
        self.usage = usage or {}

    def __call__(self, messages):
        self.seen.append(copy.deepcopy(messages))
        if self.refuse and (error := self.refuse(messages)):
            raise error
        if messages[0]["content"] == SUMMARY_PROMPT:
            return Reply("<think>hmm</think>The user read files; all went well.", "stop", {})
        return Reply("ok", "stop", self.usage)

    @property
    def turns(self):
        return [request for request in self.seen if request[0]["content"] != SUMMARY_PROMPT]


class Client:
    """The bare model seam that model.py's armour wraps: the scripted model, called as a client."""

    def __init__(self, model):
        self.model = model

    def chat(self, messages, on_delta=None):
        return self.model(messages)


def chat(context):
    """One turn as a session sends it: through the model's armour, which fits the history to the budget first
    and survives a refusal for length."""
    return SessionModel(Client(context.summarize_with), history=context).chat(context.messages)


def make_context(tokens=4000, model=None, transcript=None, log=None):
    lines = []
    context = SessionHistory([dict(SYSTEM)], tokens, model or Model(), transcript, log or lines.append)
    return context, lines


def read(context, path, size, *, ok=True):
    """A reply calling read_file, and its result of `size` bytes."""
    context.add("assistant", f"Reading {path}.\ntool: read_file({{\"path\": \"{path}\"}})", calls=["read_file"])
    context.add_results([CallResult("read_file", {"path": path}, ok, f"{path}:" + "x" * (size - len(path) - 1))], [])


# --- the estimate ---


@pytest.mark.parametrize("text, n_bytes", [
    ("hello world", 11),
    ("你好，世界", 15),  # three bytes a character: not undercounted as characters / 4 would (5 / 4 = 1)
    ("こんにちは", 15),
    ("é", 2),
    ("🙂", 4),
])
def test_the_estimate_counts_utf8_bytes(text, n_bytes):
    budget = Budget(8000)
    assert budget.estimate([{"role": "user", "content": text * 30}]) == round((n_bytes * 30 + MESSAGE_OVERHEAD) / 3)


def test_chinese_is_estimated_at_least_a_token_a_character():
    text = "把这个函数改成异步的，并且更新所有调用它的地方。" * 40
    assert Budget(8000).estimate([{"role": "user", "content": text}]) >= len(text)


def test_calibration_makes_the_estimate_match_the_servers_count():
    budget, message = Budget(8000), {"role": "user", "content": "a" * (10_000 - MESSAGE_OVERHEAD)}  # 10,000 bytes
    assert budget.calibrate([message], {"prompt_tokens": 2500}) is None
    assert budget.estimate([message]) == 2500
    assert budget.estimate([message, message]) == 5000


@pytest.mark.parametrize("usage", [{}, {"prompt_tokens": 0}, {"prompt_tokens": None}, {"prompt_tokens": 10}, None])
def test_a_missing_or_placeholder_count_changes_nothing(usage):
    budget, messages = Budget(8000), [{"role": "user", "content": "a" * 30_000}]
    assert budget.calibrate(messages, usage) is None
    assert budget.bytes_per_token == 3.0


def test_a_server_that_cuts_prompts_silently_is_warned_about_once():
    budget, messages = Budget(32_000), [{"role": "user", "content": "a" * 60_000}]
    warning = budget.calibrate(messages, {"prompt_tokens": 2048})
    assert warning == ("The server counted 2,048 prompt tokens for a request of about 20,004: it seems to cut long "
                       "prompts silently (Ollama does, at its default context), so the model did not see the whole "
                       "conversation. The context budget is now 2,048 tokens, and the history is compacted to fit. "
                       "To give the model more, raise the server's context (Ollama: OLLAMA_CONTEXT_LENGTH or the "
                       "model's num_ctx; llama.cpp: --ctx-size; LM Studio: the model's context length) and set "
                       "--context-tokens to match.")
    assert budget.calibrate(messages, {"prompt_tokens": 2048}) is None
    assert budget.bytes_per_token == 3.0  # a truncated count is not a calibration
    assert budget.tokens == 2048  # the server's figure is the budget from now on


def test_a_cut_prompt_never_takes_the_budget_below_its_minimum():
    budget, messages = Budget(32_000), [{"role": "user", "content": "a" * 60_000}]
    assert budget.calibrate(messages, {"prompt_tokens": 1024}) and budget.tokens == 2000


# --- refusals for length ---


@pytest.mark.parametrize("status, detail, limit", [
    (400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. "
          "Please reduce the length of the messages. (context_length_exceeded)", 128000),  # OpenAI
    (400, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (7000 in the "
          "messages, 2000 in the completion). Please reduce the length of the messages or completion.", 8192),  # vLLM
    (400, "The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that "
          "`max_model_len` is no smaller than the number of text tokens.", 8192),  # vLLM, newer
    (400, "request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it "
          "(exceed_context_size_error)", 4096),  # llama.cpp
    (400, "the request exceeds the available context size, try increasing it", None),  # llama.cpp, older
    (400, "the input length exceeds the context length", None),  # Ollama
    (400, "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (69000 in the "
          "messages, 1000 in the completion). Please reduce the length of the messages or completion.", 65536),
    (400, "This endpoint's maximum context length is 131,072 tokens. However, you requested about 140,000 tokens. "
          "Please reduce the length of either one, or use the \"middle-out\" transform.", 131072),  # OpenRouter
    (400, "prompt is too long: 215000 tokens > 200000 maximum", 200000),  # Anthropic
    (400, "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
     32768),  # Mistral
    (400, "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with "
          "context length of only 4096 tokens, which is not enough.", 4096),  # LM Studio
    (400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", 1048576),
    (413, "Request too large: too many tokens in the prompt", None),
    (413, "Request Entity Too Large", None),  # a proxy in front of the server, in its own words
    (400, "This model's maximum context length is , tokens", None),  # a broken template: a refusal, no number
    (400, "This model's maximum context length is 0 tokens", None),
])
def test_a_refusal_for_length_is_recognised_with_its_limit(status, detail, limit):
    error = ChatError(f"{status} from http://x/v1/chat/completions: {detail}", status, detail)
    assert window_refusal(error) == (True, limit)


def test_llama_cpps_stated_window_field_is_used():
    detail = "the request exceeds the available context size, try increasing it (exceed_context_size_error)"
    error = ChatError(f"400 from http://x/v1/chat/completions: {detail}", 400, detail)
    error.body = {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing "
                            "it", "type": "exceed_context_size_error", "n_prompt_tokens": 4384, "n_ctx": 4096}}
    assert window_refusal(error) == (True, 4096)


@pytest.mark.parametrize("status, detail", [
    (400, "Unsupported parameter: 'stop' is not supported with this model."),
    (401, "Incorrect API key provided"),
    (429, "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000."),
    (404, "The model `gpt-5-mega` does not exist"),
    (None, "Could not connect to http://localhost:11434/v1/chat/completions"),
])
def test_other_failures_are_not_refusals_for_length(status, detail):
    assert window_refusal(ChatError(detail, status, detail)) == (False, None)


def refuse_above(limit_tokens, stated=True):
    def refuse(messages):
        size = sum(len(m["content"].encode()) for m in messages) / 4
        if size > limit_tokens:
            words = f"maximum context length is {limit_tokens} tokens" if stated else "prompt is too long"
            return ChatError(f"400 from http://x: {words}", 400, f"This model's {words}.")
        return None
    return refuse


@pytest.mark.parametrize("stated", [True, False])
def test_a_refusal_lowers_the_budget_compacts_and_sends_the_same_turn_again(stated):
    model = Model(refuse=refuse_above(3000, stated))
    context, lines = make_context(tokens=32_000, model=model)
    context.add("user", "read the files")
    for n in range(4):
        read(context, f"f{n}.txt", 3000)  # each within one reply's share of a 3,000-token window
    last_results = context.messages[-1]
    reply = chat(context)
    assert reply.text == "ok"
    sent = model.turns[-1]
    assert sent[0] == SYSTEM and sent[1] == {"role": "user", "content": "read the files"} and sent[-1] == last_results
    assert sum(len(m["content"]) for m in sent) / 4 <= 3000
    assert context.budget.tokens == 3000 if stated else context.budget.tokens < 32_000
    assert any("refused the request as too long" in line for line in lines)
    assert any(line.startswith("Context compacted:") for line in lines)


def test_a_request_that_never_fits_fails_in_one_line():
    model = Model(refuse=lambda messages: ChatError("400 from http://x: prompt is too long", 400, "prompt is too long"))
    context, _ = make_context(tokens=32_000, model=model)
    context.add("user", "a task")
    with pytest.raises(ChatError) as raised:
        chat(context)
    # Either the refusals are spent, or the budget they taught leaves the task no room beside the reply's.
    assert "\n" not in str(raised.value) and "--context-tokens" in str(raised.value)
    assert "still does not fit" in str(raised.value) or "less room for the reply" in str(raised.value)
    assert len(model.turns) <= 3  # the first try and MAX_REFUSALS more at most


def test_other_failures_pass_through_untouched():
    error = ChatError("401 from http://x: bad key", 401, "bad key")
    context, _ = make_context(model=Model(refuse=lambda messages: error))
    context.add("user", "a task")
    with pytest.raises(ChatError) as raised:
        chat(context)
    assert raised.value is error


# --- compaction ---


def test_old_results_become_stubs_and_the_rest_stays_byte_identical():
    context, lines = make_context(tokens=4000)
    context.add("user", "read three files")
    for name in ("a.txt", "b.txt", "c.txt"):
        read(context, name, 4000)
    before = copy.deepcopy(context.messages)
    chat(context)
    after = context.messages
    assert len(after) == len(before)
    assert after[0] is context.messages[0] and after[0] == before[0]
    assert [after[i] for i in (1, 2, 4, 6, 7)] == [before[i] for i in (1, 2, 4, 6, 7)]  # task, the model's words, latest
    for index, name in ((3, "a.txt"), (5, "b.txt")):
        assert after[index]["content"] == (f"[read_file True]\n(Output removed to save context: 1 line, 4,000 bytes. "
                                           f'If you need it again, call read_file({{"path": "{name}"}}).)')
    assert lines == [line for line in lines if line.startswith("Context compacted: 2 older tool results replaced by stubs")]


def test_a_call_with_effects_is_stubbed_without_an_invitation_to_repeat_it():
    context, _ = make_context(tokens=4000)
    context.add("user", "run it")
    context.add("assistant", "tool: run_command(...)", calls=["run_command"])
    context.add_results([CallResult("run_command", {"command": "make deploy " + "v" * 100}, True, "y" * 6000)], [])
    read(context, "a.txt", 5000)
    context.compact()
    assert context.messages[3]["content"] == (
        "[run_command True]\n(Output removed to save context: 1 line, 6,000 bytes, of "
        'run_command({"command": "make deploy ' + "v" * 48 + '…"}).)')


def test_a_summary_replaces_older_turns_keeping_the_task_and_the_recent_turns():
    model = Model()
    context, lines = make_context(tokens=4000, model=model)
    for n in range(6):  # earlier tasks whose turns are mostly the model's own long notes
        context.add("user", f"task {n}")
        context.add("assistant", f"Answer {n}: " + "note " * 140)
    context.add("user", "the current task")
    read(context, "a.txt", 4500)
    recent = copy.deepcopy(context.messages[-2:])
    chat(context)
    messages = context.messages
    assert messages[0] == SYSTEM
    assert messages[1]["content"] == SUMMARY_HEAD + "The user read files; all went well."
    assert messages[2] == {"role": "assistant", "content": SUMMARY_ACK}
    assert messages[3] == {"role": "user", "content": "the current task"}
    assert messages[-2:] == recent
    roles = [m["role"] for m in messages[1:]]
    assert roles == [("user", "assistant")[i % 2] for i in range(len(roles))] and roles[-1] == "user"
    summary_request = next(request for request in model.seen if request[0]["content"] == SUMMARY_PROMPT)
    assert "Answer 0: note" in summary_request[1]["content"] and "User:\ntask 0" in summary_request[1]["content"]
    assert "older messages replaced by a summary" in lines[-1]


def test_after_a_compaction_requests_only_grow_by_appending():
    """Prompt caches hit on a shared prefix: between two compactions each request extends the one before."""
    model = Model()
    context, _ = make_context(tokens=4000, model=model)
    for n in range(12):
        context.add("user", f"task {n}")
        chat(context)
        read(context, f"file{n}.txt", 2500)
        chat(context)
        context.add("assistant", f"done {n}")
    turns = model.turns
    prefixes = sum(later[:len(earlier)] == earlier for earlier, later in zip(turns, turns[1:]))
    compacted = len(turns) - 1 - prefixes
    assert 0 < compacted <= 8  # stubs every other task or so, not every request
    assert all(len(turn) >= 2 and turn[0] == SYSTEM for turn in turns)


def test_forced_compaction_stubs_and_summarizes_even_a_small_history():
    context, _ = make_context(tokens=32_000)
    context.add("user", "first")
    read(context, "a.txt", 500)
    context.add("assistant", "first done")
    context.add("user", "second")
    read(context, "b.txt", 500)
    context.add("assistant", "second done")
    assert context.compact() is None  # far below the budget: nothing to do
    line = context.compact(force=True)
    assert "1 older tool result replaced by a stub" in line and "replaced by a summary" in line
    assert context.messages[1]["content"].startswith(SUMMARY_HEAD)


def test_nothing_to_compact_in_a_fresh_session():
    context, _ = make_context()
    assert context.compact(force=True) is None
    assert context.messages == [SYSTEM]


def test_a_failed_summary_call_still_compacts_with_what_was_said():
    def refuse_summaries(messages):
        if messages[0]["content"] == SUMMARY_PROMPT:
            return ChatError("503 from http://x: overloaded", 503, "overloaded")
        return None
    context, _ = make_context(tokens=4000, model=Model(refuse=refuse_summaries))
    for n in range(6):
        context.add("user", f"task {n}")
        context.add("assistant", f"Answer {n}: " + "note " * 100)
    context.add("user", "now")
    context.compact(force=True)
    summary = context.messages[1]["content"]
    assert summary.startswith(SUMMARY_HEAD + "(No summary could be written: 503 from http://x: overloaded) "
                              "The replaced turns ended:\n…")
    assert summary.endswith("User:\ntask 5\n\nAssistant:\nAnswer 5: " + "note " * 100)
    assert context.messages[2:] == [{"role": "assistant", "content": SUMMARY_ACK}, {"role": "user", "content": "now"}]


def test_compactions_are_recorded_and_resume_to_the_compacted_history(tmp_path):
    transcript = Transcript.create(tmp_path / "t.jsonl", {"model": "m"})
    context, _ = make_context(tokens=4000, transcript=transcript)
    context.add("user", "read three files")
    for name in ("a.txt", "b.txt", "c.txt"):
        read(context, name, 4000)
    chat(context)
    loaded = load(tmp_path / "t.jsonl")
    assert loaded.messages == context.messages[1:]
    assert loaded.results == {index: record for index, record in context.results.items()}


@pytest.mark.parametrize("seed", range(30))
def test_random_sessions_keep_the_history_well_formed_and_inside_the_budget(seed):
    """Whatever the mix of tasks, notes and result sizes: one system prompt, untouched; roles alternate;
    the current task is there verbatim; every request sent fits the budget."""
    rng = random.Random(seed)
    tokens = rng.choice([3000, 4000, 8000])
    model = Model()
    context, _ = make_context(tokens=tokens, model=model)
    for n in range(rng.randint(3, 12)):
        task = f"task {n} " + "words " * rng.randint(0, 50)
        context.add("user", task)
        for step in range(rng.randint(0, 4)):
            chat(context)
            context.add("assistant", f"step {step} " + "thinking " * rng.randint(0, 120), calls=["read_file"])
            outputs = [CallResult("read_file", {"path": f"f{i}"}, rng.random() > 0.2, "z" * rng.randint(0, 9000))
                       for i in range(rng.randint(1, 3))]
            context.add_results(outputs, ["a note"] if rng.random() < 0.2 else [])
            chat(context)
            assert any(m["content"] == task for m in model.turns[-1])
        context.add("assistant", "done")
    for request in model.turns:
        assert request[0] == SYSTEM and all(m["role"] != "system" for m in request[1:])
        roles = [m["role"] for m in request[1:]]
        assert roles == [("user", "assistant")[i % 2] for i in range(len(roles))] and roles[-1] == "user"
        assert Budget(tokens).estimate(request) <= 0.75 * tokens  # room left for the reply, always


@pytest.mark.parametrize("sizes, room, whole", [
    ([100, 200], 1000, [True, True]),
    ([100, 5000], 2000, [True, False]),
    ([3000, 3000, 50], 2000, [False, False, True]),
])
def test_results_too_long_for_the_budget_are_cut_with_a_note(sizes, room, whole):
    outputs = ["".join(f"line {i}\n" for i in range(size)) [:size] for size in sizes]
    fitted = fit_outputs(outputs, room)
    assert [a == b for a, b in zip(fitted, outputs)] == whole
    assert sum(len(text.encode()) for text in fitted) <= room + 250 * whole.count(False)
    for text, original in zip(fitted, outputs):
        if text != original:
            head, note = text.split("\n(Cut here to fit the context budget: ")
            assert original.startswith(head) and "read_file with offset and limit" in note


def test_a_huge_result_is_cut_to_half_the_budget_when_added():
    context, _ = make_context(tokens=4000)
    context.add("user", "read it")
    read(context, "big.txt", 100_000)
    assert 5000 < len(context.messages[-1]["content"]) <= 0.5 * 4000 * 3
    assert context.results[3]["calls"][0]["bytes"] == 100_000  # what a stub will say: the output's real size


# --- the current task's results, cut again when they do not fit ---


def test_a_lowered_budget_cuts_the_current_results_again_and_the_turn_is_retried():
    """A page sized for a 32,000-token budget, refused by a 4,096-token window: cut again, sent once more, fits."""
    model = Model(refuse=refuse_above(4096))
    context, lines = make_context(tokens=32_000, model=model)
    context.add("user", "read big.txt")
    read(context, "big.txt", 30_000)
    assert chat(context).text == "ok"
    assert len(model.turns) == 2  # refused once, then sent cut
    sent = model.turns[-1]
    assert sent[1] == {"role": "user", "content": "read big.txt"}
    assert "(Cut here to fit the context budget" in sent[-1]["content"]
    assert Budget(4096).estimate(sent) <= 0.75 * 4096


def test_without_the_outputs_at_hand_the_current_results_become_a_stub_saying_to_read_less():
    model = Model(refuse=refuse_above(4096))
    context, _ = make_context(tokens=32_000, model=model)
    context.add("user", "read big.txt")
    read(context, "big.txt", 30_000)
    context.outputs.clear()  # as after --resume: only the rendered message is known
    assert chat(context).text == "ok"
    assert model.turns[-1][-1]["content"] == (
        "[read_file True]\n(Output removed to save context: 1 line, 30,000 bytes. It is too long for the context "
        "window: ask for less at a time (read_file with offset and limit, a narrower search, a command with less "
        "output).)")


def test_the_results_cap_leaves_room_for_the_system_prompt():
    system = {"role": "system", "content": "s" * 2400}  # 800 tokens
    context = SessionHistory([system], 2000, Model())
    context.add("user", "read it")
    read(context, "big.txt", 100_000)
    assert context.budget.estimate(context.messages) <= 0.75 * 2000


def test_no_request_over_the_budget_is_sent_the_newest_results_are_cut_further():
    model = Model()
    context, lines = make_context(tokens=3000, model=model)
    context.add("user", "look at this log: " + "w" * 5000)  # with the results' own share, past the budget
    read(context, "a.txt", 4400)
    chat(context)
    assert Budget(3000).estimate(model.turns[-1]) <= 0.75 * 3000
    assert "(Cut here to fit the context budget" in model.turns[-1][-1]["content"]


def test_a_task_larger_than_the_window_says_so():
    model = Model(refuse=refuse_above(2000))
    context, _ = make_context(tokens=2000, model=model)
    context.add("user", "fix this: " + "y" * 20_000)
    with pytest.raises(ChatError) as raised:
        chat(context)
    assert str(raised.value) == ("the task itself is about 6,674 tokens, more than the 1,800 a request may hold "
                                 "(the context budget of 2,000 less room for the reply): "
                                 "shorten it, or put it in a file and ask to read that file.")
    assert model.turns == []


@pytest.mark.parametrize("task", ["fix the typo", "fix this: " + "y" * 2_000], ids=["short task", "longer task"])
def test_a_system_prompt_larger_than_the_window_is_named_not_the_task(task):
    """A large AGENTS.md and a small --context-tokens: it is the system prompt that does not fit, whatever the
    task (short, or shorter than the system prompt)."""
    model = Model()
    context = SessionHistory([{"role": "system", "content": "Tools...\n# AGENTS.md\n" + "Rule: be careful.\n" * 800}], 2000,
                      model)
    context.add("user", task)
    with pytest.raises(ChatError) as raised:
        chat(context)
    system, asked = (context.budget.estimate([message]) for message in context.messages)
    assert system > asked and system + asked > 2000
    also = "" if system > 2000 else f" and the task about {asked:,}"
    assert str(raised.value) == (
        f"the system prompt is about {system:,} tokens{also}, more than the 1,800 a request may hold (the context "
        "budget of 2,000 less room for the reply): the tools' descriptions and any AGENTS.md instructions go with "
        "every request. Shorten AGENTS.md, or give the model a larger window (--context-tokens, and a local server's own context size).")
    assert model.turns == []


def test_a_task_and_a_system_prompt_that_fit_only_apart_name_the_larger_part():
    model = Model()
    context = SessionHistory([{"role": "system", "content": "S" * 2_400}], 2000, model)
    context.add("user", "fix this: " + "y" * 4_000)
    with pytest.raises(ChatError) as raised:
        chat(context)
    system, asked = (context.budget.estimate([message]) for message in context.messages)
    assert asked < 2000 < system + asked
    assert str(raised.value) == (f"the task itself is about {asked:,} tokens and the system prompt about {system:,}, "
                                 "more than the 1,800 a request may hold (the context budget of 2,000 less room "
                                 "for the reply): shorten the task, or put it in a file and ask to read that file.")


def test_a_cut_output_keeps_its_head_and_its_tail_and_states_its_real_size():
    output = "".join(f"test {n:03d} passed\n" for n in range(1, 201)) + "FAILED test_x: boom\n1 failed, 199 passed\n"
    fitted = fit_outputs([output], 1000)[0]
    assert fitted == ("".join(f"test {n:03d} passed\n" for n in range(1, 22))
                      + "(Cut here to fit the context budget: this result has 202 lines, 3,241 bytes; the 2,560 bytes "
                        "between here and its last lines are not shown. Ask for less at a time: read_file with offset "
                        "and limit, a narrower search, a command with less output.)\n"
                      + "".join(f"test {n:03d} passed\n" for n in range(182, 201))
                      + "FAILED test_x: boom\n1 failed, 199 passed\n")


# --- compaction never makes the history bigger ---


class Verbose(Model):
    """A model whose summaries are far longer than asked."""

    def __call__(self, messages):
        if messages[0]["content"] == SUMMARY_PROMPT:
            self.seen.append(copy.deepcopy(messages))
            return Reply("Notes. " * 2000, "stop", {})
        return super().__call__(messages)


def test_a_summary_is_cut_to_a_share_of_a_small_budget():
    context, _ = make_context(tokens=2048, model=Verbose())
    for n in range(4):
        context.add("user", f"task {n}")
        context.add("assistant", f"Answer {n}: " + "note " * 200)
    context.add("user", "now")
    context.compact(force=True)
    summary = context.messages[1]["content"]
    assert summary == SUMMARY_HEAD + ("Notes. " * 2000)[:614] + " [… the rest of the summary was cut]"


def test_a_compaction_that_does_not_shrink_the_history_is_not_kept():
    context, lines = make_context(tokens=32_000, model=Verbose())
    context.add("user", "task 0")
    context.add("assistant", "short answer")
    context.add("user", "now")
    before = copy.deepcopy(context.messages)
    assert context.compact(force=True) is None
    assert context.messages == before and lines == []


def test_compact_on_a_history_that_is_already_a_summary_calls_no_model():
    model = Model()
    context, lines = make_context(tokens=4000, model=model)
    for n in range(3):
        context.add("user", f"task {n}")
        context.add("assistant", f"Answer {n}: " + "note " * 100)
    first = context.compact(force=True)
    assert first.startswith("Context compacted:") and lines == []  # returned for /compact to show, not logged too
    n_calls = len(model.seen)
    assert context.compact(force=True) is None and len(model.seen) == n_calls


def test_compact_keeps_the_last_tasks_turns_verbatim():
    context, _ = make_context(tokens=32_000)
    context.add("user", "first")
    context.add("assistant", "first done " * 50)
    context.add("user", "second")
    context.add("assistant", "tool: read_file({\"path\": \"b.txt\"})", calls=["read_file"])
    context.add_results([CallResult("read_file", {"path": "b.txt"}, True, "b")], [])
    context.add("assistant", "second done")
    last_task = copy.deepcopy(context.messages[3:])
    context.compact(force=True)
    assert context.messages[3:] == last_task


def requests_of(n_bytes: int) -> list[dict]:
    return [{"role": "user", "content": "a" * (n_bytes - MESSAGE_OVERHEAD)}]


def test_a_count_that_stays_flat_while_requests_grow_is_a_cut_prompt_warned_at_once_with_true_figures():
    """Ollama cutting prompts at 4,096 tokens, with a real tokenizer of 3.6 bytes a token: 18 KB is 5,000 tokens
    but counted 4,096 (4.4 bytes a token: a tokenizer could). The flat count gives it away, at the first sign."""
    budget = Budget(8000)
    assert budget.calibrate(requests_of(10_800), {"prompt_tokens": 3000}) is None
    assert budget.calibrate(requests_of(14_400), {"prompt_tokens": 4000}) is None
    assert budget.bytes_per_token == 3.6
    warning = budget.calibrate(requests_of(18_000), {"prompt_tokens": 4096})
    assert warning.startswith("The server counted 4,096 prompt tokens for a request of about 5,000:")
    assert budget.bytes_per_token == 3.6
    assert budget.calibrate(requests_of(27_000), {"prompt_tokens": 4096}) is None  # said once; still not learnt
    assert budget.bytes_per_token == 3.6 and budget.estimate(requests_of(27_000)) == 7500


@pytest.mark.parametrize("n_bytes, tokens, learnt", [
    (30_800, 4000, 3.0),  # 7.7 bytes a token: the old limit of 8 took it for a tokenizer
    (20_000, 3500, 3.0),  # 5.7 from 3.0: too far a jump to learn from one count
    (17_000, 4000, 4.25),  # English prose: learnt
])
def test_counts_that_look_cut_are_not_learnt(n_bytes, tokens, learnt):
    budget = Budget(8000)
    budget.calibrate(requests_of(n_bytes), {"prompt_tokens": tokens})
    assert budget.bytes_per_token == learnt


def test_a_real_count_is_learnt_after_a_refusal_lowered_the_estimate_far():
    budget = Budget(8000)
    budget.bytes_per_token = 2.0  # as a refusal for a request we thought fitted leaves it
    budget.calibrate(requests_of(14_400), {"prompt_tokens": 4000})
    assert budget.bytes_per_token == 3.6


def test_after_a_summary_the_current_results_are_still_cut_not_stubbed():
    model = Model()
    context, _ = make_context(tokens=4000, model=model)
    for n in range(6):
        context.add("user", f"task {n}")
        context.add("assistant", f"Answer {n}: " + "note " * 140)
    context.add("user", "now look at this: " + "w" * 3000)
    read(context, "a.txt", 5800)
    chat(context)
    sent = model.turns[-1]
    assert sent[1]["content"].startswith(SUMMARY_HEAD) and "(Cut here to fit the context budget" in sent[-1]["content"]
    assert Budget(4000).estimate(sent) <= 0.75 * 4000


# --- a small window: room for the reply (issue 26) ---


def test_a_refusal_that_counts_the_prompt_teaches_this_servers_tokens():
    """llama.cpp's server states n_prompt_tokens, llama-cpp-python's message '(N in the messages': the estimate is
    corrected from them, not guessed."""
    messages = [dict(SYSTEM), {"role": "user", "content": "x" * 9000}]
    sent = sum(len(m["content"]) + MESSAGE_OVERHEAD for m in messages)
    detail = "request (4500 tokens) exceeds the available context size (4096 tokens), try increasing it"
    llama = ChatError(f"400 from http://x: {detail}", 400, detail, {"error": {
        "code": 400, "message": detail, "type": "exceed_context_size_error", "n_prompt_tokens": 4500, "n_ctx": 4096}})
    openai = ("This model's maximum context length is 4096 tokens. However, you requested 4516 tokens (4500 in the "
              "messages, 16 in the completion).")
    for error in (llama, ChatError(openai, 400, openai)):
        budget = Budget(32_000)
        budget.refused(messages, window_refusal(error)[1], stated_prompt(error))
        assert budget.tokens == 4096 and budget.bytes_per_token == sent / 4500


class CutModel(Model):
    """Answers the first `n_cut` turns with `cut`, a reply cut off ("length"), then "ok"."""

    def __init__(self, cut: Reply, n_cut: int = 1):
        super().__init__()
        self.cut, self.n_cut = cut, n_cut

    def __call__(self, messages):
        reply = super().__call__(messages)
        return copy.deepcopy(self.cut) if len(self.turns) <= self.n_cut and reply.text == "ok" else reply


def test_a_reply_cut_at_the_output_limit_far_below_the_window_is_no_news_about_it():
    model = CutModel(Reply("A long essay. " * 1000, "length", {"prompt_tokens": 2000, "completion_tokens": 4096}))
    context, lines = make_context(tokens=32_000, model=model)
    context.add("user", "write an essay")
    reply = chat(context)
    assert reply.finish_reason == "length" and not reply.window_full and len(model.turns) == 1
    assert "output token limit" in reply.no_answer(reply.text) and context.budget.tokens == 32_000 and lines == []


def test_a_reply_cut_after_a_few_words_met_the_window_even_one_not_known():
    """No server's output limit is two words: the window ended there, though the budget (32,000) said otherwise."""
    model = CutModel(Reply("In the", "length", {}))
    context, lines = make_context(tokens=32_000, model=model)
    context.add("user", "explain")
    for n in range(3):
        read(context, f"f{n}.txt", 3000)
    assert chat(context).text == "ok"
    assert len(model.turns) == 2 and context.budget.tokens < 32_000
    assert any(line.startswith("The reply was cut off: the context window is full") for line in lines)


def test_a_window_still_full_on_the_last_try_is_said_to_be_the_window():
    model = CutModel(Reply("In", "length", {"prompt_tokens": 4094, "completion_tokens": 2}), n_cut=10)
    context, _ = make_context(tokens=4096, model=model)
    context.add("user", "explain")
    reply = chat(context)
    assert reply.window_full and len(model.turns) == 3  # the first try and MAX_REFUSALS more
    assert "the context window is full" in reply.no_answer(reply.text)
    assert "output token limit" not in reply.no_answer(reply.text)


def test_the_room_a_reply_takes_is_learnt_and_kept_free():
    """A history fitted to the window leaves the reply nothing: the longest reply so far is kept free."""
    model = Model(usage={"prompt_tokens": 500, "completion_tokens": 1500})
    context, _ = make_context(tokens=4000, model=model)
    context.add("user", "read the files")
    assert context.budget.most() == 3600  # a tenth of the budget, before any reply
    chat(context)
    assert context.budget.most() == 2500
    for n in range(3):
        read(context, f"f{n}.txt", 2400)
    chat(context)
    assert context.budget.estimate(model.turns[-1]) <= 2500


@pytest.mark.parametrize("usage", [{"prompt_tokens": 0, "completion_tokens": 0}, None, {"prompt_tokens": True}])
def test_a_cut_reply_with_a_placeholder_count_teaches_no_absurd_window(usage):
    model = CutModel(Reply("In", "length", usage))
    context, _ = make_context(tokens=32_000, model=model)
    context.add("user", "explain")
    assert chat(context).text == "ok"
    assert context.budget.tokens >= 1000 and len(model.turns) == 2
