// `{{name}}`: a husk operation. Input {"name": "Ada"}, output
// {"greeting": "hello, Ada"}; input without a "name" is the fault
// `invalid-input`. build.sh puts this file into the bindings' package
// `export_wit_world`, whose `Execute` the generated glue calls.
package export_wit_world

import (
	"encoding/json"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wit_component/husk_worker_types"
)

type Result = witTypes.Result[[]byte, husk_worker_types.Fault]

func Execute(job husk_worker_types.Job) Result {
	var input struct {
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(job.Input, &input); err != nil || input.Name == nil {
		body, _ := json.Marshal(map[string]string{"error": "missing field `name`"})
		return witTypes.Err[[]byte](husk_worker_types.Fault{Code: "invalid-input", Body: body})
	}
	out, err := json.Marshal(map[string]string{"greeting": "hello, " + *input.Name})
	if err != nil {
		panic(err)
	}
	return witTypes.Ok[[]byte, husk_worker_types.Fault](out)
}
