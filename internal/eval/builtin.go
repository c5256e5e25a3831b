package eval

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"agentrun.dev/agentrun/internal/api"
)

// Builtins are the environments shipped with the binary:
//
//   - nodus/arithmetic-v2@2.0.0 (the seed's example): "What is A op B?" with a number as the hidden
//     answer, graded by normalized match; splits test and train of 20 tasks each.
//   - agentrun/write-file@1.0.0: the agent writes a file with a given word into its folder; a
//     script grader checks the file in a copy of the run folder. The agent needs the write tool.
func Builtins() []*api.Environment {
	return []*api.Environment{arithmetic(), writeFile()}
}

func arithmetic() *api.Environment {
	rng := rand.New(rand.NewPCG(2, 0)) // fixed: the tasks of version 2.0.0 never change
	split := func(prefix string, n int) []api.Task {
		var out []api.Task
		for i := range n {
			a, b := rng.IntN(90)+10, rng.IntN(90)+10
			op, v := "+", a+b
			switch rng.IntN(3) {
			case 1:
				op, v = "-", a-b
			case 2:
				op, v = "*", a*b
			}
			ans, _ := json.Marshal(fmt.Sprint(v))
			out = append(out, api.Task{ID: fmt.Sprintf("%s-%02d", prefix, i+1),
				Prompt: fmt.Sprintf("What is %d %s %d? Answer with the number only.", a, op, b), Answer: ans})
		}
		return out
	}
	return &api.Environment{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Environment"},
		Metadata: api.ObjectMeta{Name: "nodus/arithmetic-v2"},
		Spec: api.EnvironmentSpec{Version: "2.0.0", Description: "Two-number arithmetic; the answer is the number (normalized match).",
			Grader: api.GraderSpec{Kind: "normalized"},
			Splits: map[string][]api.Task{"test": split("test", 20), "train": split("train", 20)}},
		Status: api.EnvironmentStatus{Builtin: true}}
}

const writeFileGrader = `#!/bin/sh
# expected.json is {"file": NAME, "content": WORD}; workspace/ is a copy of the run's folder.
file=$(sed -n 's/.*"file": *"\([^"]*\)".*/\1/p' expected.json)
want=$(sed -n 's/.*"content": *"\([^"]*\)".*/\1/p' expected.json)
if [ ! -f "workspace/$file" ]; then
  echo "{\"pass\": false, \"reward\": 0, \"evidence\": \"the run folder has no $file\"}"
  exit 0
fi
got=$(tr -d '\r\n' < "workspace/$file")
if [ "$got" = "$want" ]; then
  echo "{\"pass\": true, \"reward\": 1, \"evidence\": \"$file holds the expected word\"}"
else
  echo "{\"pass\": false, \"reward\": 0, \"evidence\": \"$file does not hold the expected word\"}"
fi
`

func writeFile() *api.Environment {
	words := []string{"amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper"}
	var tasks []api.Task
	for i, w := range words {
		ans, _ := json.Marshal(map[string]string{"file": "answer.txt", "content": w})
		tasks = append(tasks, api.Task{ID: fmt.Sprintf("word-%02d", i+1),
			Prompt: fmt.Sprintf("Create a file named answer.txt in your folder containing exactly the word %s (nothing else), then reply done.", w), Answer: ans})
	}
	return &api.Environment{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Environment"},
		Metadata: api.ObjectMeta{Name: "agentrun/write-file"},
		Spec: api.EnvironmentSpec{Version: "1.0.0", Description: "Write a word into answer.txt; a script checks the run's folder.",
			Grader: api.GraderSpec{Kind: "script", Script: writeFileGrader, TimeoutSeconds: 30},
			Splits: map[string][]api.Task{"test": tasks}},
		Status: api.EnvironmentStatus{Builtin: true}}
}
