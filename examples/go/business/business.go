// `business`: failures that are business outcomes, for the mapper to name.
//
// Input {"account": "acme", "amount": 120, "balance": 100}:
//   - amount > balance: fault `payment.declined`, body {"reason": "insufficient-funds", ...};
//   - account "frozen": fault `account.frozen`, body {"status": "frozen"};
//   - otherwise {"charged": amount, "balance": balance - amount}.
package export_wit_world

import (
	"encoding/json"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wit_component/husk_worker_types"
)

func Execute(job husk_worker_types.Job) witTypes.Result[[]byte, husk_worker_types.Fault] {
	var in struct {
		Account *string  `json:"account"`
		Amount  *float64 `json:"amount"`
		Balance *float64 `json:"balance"`
	}
	if err := json.Unmarshal(job.Input, &in); err != nil || in.Account == nil || in.Amount == nil || in.Balance == nil {
		return fault("invalid-input", map[string]string{"error": "expected account, amount and balance"})
	}
	amount, balance := int64(*in.Amount), int64(*in.Balance)
	switch {
	case *in.Account == "frozen":
		return fault("account.frozen", map[string]string{"status": "frozen"})
	case *in.Amount > *in.Balance:
		return fault("payment.declined", map[string]any{"reason": "insufficient-funds", "amount": amount, "balance": balance})
	}
	return ok(map[string]int64{"charged": amount, "balance": int64(*in.Balance - *in.Amount)})
}
