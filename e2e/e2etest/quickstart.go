package e2etest

const QuickstartScript = `
entries:
  - name: notes
    match: "Ask me which region"
    turns:
      - text: "I'll ask which region."
        tool_calls:
          - name: ask_person
            input: {question: "Which region should I cover?"}
      - tool_calls:
          - name: write
            input: {path: region.md, content: "# {{last_tool_result}}\n\nNotes about {{last_tool_result}}.\n"}
      - text: "I wrote region.md: {{last_tool_result}}."
`

// SeedQuickstart is the AgentRun seed's "A first run from the terminal", typed as a user would,
// with the binary (on PATH as agentrun) in place of npx @parcha/agentrun. Two lines are added to
// record the exit code of step 2 and keep its output.
const SeedQuickstart = `set -e
# 1. Make an agent that can write files and ask you things.
cat > agent.json <<'JSON'
{"definition": {"id": "notes", "version": 1, "name": "Notes",
  "instructions": "Do what you are asked, and write what you make to a file.",
  "skills": [], "tools": ["write", "ask_person"]}}
JSON
agentrun agents create --body @agent.json

# 2. Start a capped run and wait. It stops to ask you which region (exit code 8: it waits on you).
set +e
agentrun runs start notes --max-cost-usd 1 --wait \
  --body '{"input": {"content": "Ask me which region to cover, then write region.md about it."}}' > out.json
echo "start-exit=$?" >&2
set -e
cp out.json out1.json

# 3. Answer, wait for it to finish, and read what it wrote.
run=$(node -p 'require("./out.json").run_id')
agentrun runs message "$run" --content "Europe"
agentrun runs wait "$run" > out.json
agentrun runs read-file "$run" region.md
`
