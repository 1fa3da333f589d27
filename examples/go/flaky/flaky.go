// `flaky`: a technical fault until a given attempt, then success.
//
// Input {"succeed_on_attempt": 3}: attempts 1 and 2 fail with
// `flaky.unavailable`, attempt 3 and later return {"attempt": N}.
package export_wit_world

import (
	"encoding/json"
	"fmt"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wit_component/husk_worker_log"
	"wit_component/husk_worker_types"
)

func Execute(job husk_worker_types.Job) witTypes.Result[[]byte, husk_worker_types.Fault] {
	var in struct {
		SucceedOnAttempt *uint32 `json:"succeed_on_attempt"`
	}
	if err := json.Unmarshal(job.Input, &in); err != nil || in.SucceedOnAttempt == nil {
		return fault("invalid-input", map[string]string{"error": "succeed_on_attempt must be a whole number"})
	}
	if job.Attempt < *in.SucceedOnAttempt {
		husk_worker_log.Log(husk_worker_log.LevelWarn,
			fmt.Sprintf("attempt %d of job %s: dependency unavailable", job.Attempt, job.Id))
		return fault("flaky.unavailable", map[string]uint32{"attempt": job.Attempt, "succeed_on_attempt": *in.SucceedOnAttempt})
	}
	return ok(map[string]uint32{"attempt": job.Attempt})
}
