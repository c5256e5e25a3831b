# The Nodus seed's "From Python" snippet, as written there.
import nodus
agent = nodus.ClaudeAgent("helper", system="You are careful.", families=["haiku", "sonnet"])
print(agent.remote("Use the shell to print the Python version"))  # runs to the end, returns the answer
run = agent.submit("Summarize the logs", keep_alive=True)  # a handle: run.answer(), run.steps(), run.cancel()
run.send("message", "Now the staging logs")
