// Shared by the operations (copied beside each one's file by ../build):
// the output and the fault, JSON-encoded.
package export_wit_world

import (
	"encoding/json"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wit_component/husk_worker_types"
)

// ok is the job's output: value as JSON.
func ok(value any) witTypes.Result[[]byte, husk_worker_types.Fault] {
	out, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	return witTypes.Ok[[]byte, husk_worker_types.Fault](out)
}

// fault is a raw failure with code and body as JSON.
func fault(code string, body any) witTypes.Result[[]byte, husk_worker_types.Fault] {
	out, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return witTypes.Err[[]byte](husk_worker_types.Fault{Code: code, Body: out})
}
