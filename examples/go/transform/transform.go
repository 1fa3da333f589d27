// `transform`: input {"name": "Ada", "amount": 12.5}, output
// {"greeting": "hello, Ada", "amount_cents": 1250}.
package export_wit_world

import (
	"encoding/json"
	"math"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wit_component/husk_worker_types"
)

type input struct {
	Name   *string `json:"name"`
	Amount float64 `json:"amount"`
}

func Execute(job husk_worker_types.Job) witTypes.Result[[]byte, husk_worker_types.Fault] {
	var in input
	if err := json.Unmarshal(job.Input, &in); err != nil || in.Name == nil {
		return fault("invalid-input", map[string]string{"error": "missing field `name`"})
	}
	return ok(map[string]any{
		"greeting":     "hello, " + *in.Name,
		"amount_cents": int64(math.Round(in.Amount * 100)), // half away from zero
	})
}
