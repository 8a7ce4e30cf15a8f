"""A LangGraph agent whose long-term memory is a running jido-kg service (no LLM, no network).

LangMem's memory tools (`create_manage_memory_tool`, `create_search_memory_tool`) run on
`kg.integrations.langgraph.JidoStore`; a scripted chat model from langchain-core asks for the
tool calls an LLM would make. One run stores a memory, a later run (a new process) finds it:

    jido-kg serve --store data/store                   # KG_TOKENS='{"s3cret": "write"}'
    .venv/bin/python data/langgraph_agent.py --url http://127.0.0.1:7879 --token s3cret \\
        remember "I prefer green tea in the morning"
    .venv/bin/python data/langgraph_agent.py --url http://127.0.0.1:7879 --token s3cret \\
        recall "which tea does the user prefer?"

The URL and token may come from KG_URL and KG_TOKEN instead. Each memory is a typed jido:Fact
of the project (default `demo`) in the namespace ("memories", <user>): SPARQL sees it too.
Needs the `langgraph` extra: pip install 'jido-kg[langgraph]'.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langmem import create_manage_memory_tool, create_search_memory_tool

from kg.client import MemoryClient
from kg.integrations.langgraph import JidoStore

NAMESPACE = ("memories", "{user_id}")  # LangMem fills {user_id} from the run's config


def scripted_model(task: str, text: str) -> FakeMessagesListChatModel:
    """The replies an LLM would give: one tool call, then an answer after the tool's result."""
    if task == "remember":
        call = {"name": "manage_memory", "args": {"content": text, "action": "create"}}
        answer = "I will remember that."
    else:
        call = {"name": "search_memory", "args": {"query": text, "limit": 3}}
        answer = "Here is what I remember (see the tool's result above)."
    return FakeMessagesListChatModel(responses=[
        AIMessage(content="", tool_calls=[{**call, "id": f"call_{uuid.uuid4().hex[:8]}"}]),
        AIMessage(content=answer),
    ])


def build_agent(model: FakeMessagesListChatModel, store: JidoStore) -> Any:
    """A tool-calling loop: the model, LangMem's tools, back to the model until it answers."""
    tools = [create_manage_memory_tool(namespace=NAMESPACE),
             create_search_memory_tool(namespace=NAMESPACE)]

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile(store=store)  # the tools reach the store through the graph's runtime


def main(argv: list[str] | None = None) -> int:
    """Run the agent once: `remember TEXT` or `recall QUERY`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=["remember", "recall"])
    parser.add_argument("text")
    parser.add_argument("--url", default=os.environ.get("KG_URL", "http://127.0.0.1:7879"))
    parser.add_argument("--token", default=os.environ.get("KG_TOKEN"))
    parser.add_argument("--project", default="demo")
    parser.add_argument("--user", default="alice")
    args = parser.parse_args(argv)
    with MemoryClient(args.url, token=args.token) as client:
        store = JidoStore(client, project=args.project, agent="langgraph-example")
        agent = build_agent(scripted_model(args.task, args.text), store)
        config: RunnableConfig = {"configurable": {"user_id": args.user}}
        state = agent.invoke({"messages": [HumanMessage(args.text)]}, config)
    for message in state["messages"]:
        if isinstance(message, ToolMessage):
            print(f"[{message.name}] {message.content}")
        elif isinstance(message, AIMessage) and message.content:
            print(f"[assistant] {message.content}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
