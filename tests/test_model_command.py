"""/model NAME in a session: each request carries the parameters of the model it goes to, whichever came before."""

from fake_endpoint import FakeEndpoint

from agent import build_session
from harness.cli.config import Config
from harness.cli.repl import run_slash_command
from harness.files.workspace import Workspace
from harness.model.client import Client

STOP = ["\ntool_result("]


def picky_server(body: dict):
    """A server whose model "picky" rejects `stop`, as OpenAI's reasoning models do; the others take it."""
    if body["model"] == "picky" and "stop" in body:
        return {"status": 400, "body": {"error": {"message": "Unsupported parameter: 'stop' is not supported with "
                                                  "this model.", "param": "stop"}}}
    return f"Answer from {body['model']}."


def test_switching_models_sends_each_the_parameters_it_takes_and_learns_per_model(tmp_path):
    lines: list[str] = []
    with FakeEndpoint([picky_server] * 8) as endpoint:
        client = Client(endpoint.url, "", "gpt-4o", stop=STOP, log=lines.append)
        session = build_session(Config(model="gpt-4o"), client, Workspace(tmp_path), log=lines.append)
        answers = [session.run("one")]
        for model in ("o3-mini", "gpt-4o", "picky", "gpt-4o", "picky"):
            assert run_slash_command(session, f"/model {model}") == f"The next requests go to {model}."
            answers.append(session.run("next"))
    assert answers == ["Answer from gpt-4o.", "Answer from o3-mini.", "Answer from gpt-4o.", "Answer from picky.",
                       "Answer from gpt-4o.", "Answer from picky."]
    assert [(request.body["model"], request.body.get("stop")) for request in endpoint.received] == [
        ("gpt-4o", STOP), ("o3-mini", None), ("gpt-4o", STOP),  # o3 is never sent `stop`; gpt-4o gets it back
        ("picky", STOP), ("picky", None),  # one 400 teaches the client about picky...
        ("gpt-4o", STOP), ("picky", None)]  # ...and only about picky
    assert lines == ["picky rejects the 'stop' parameter; sending requests without it"]
