// `runaway`: loops forever. The host's deadline kills it (`husk.timeout`).
package export_wit_world

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"wit_component/husk_worker_types"
)

var spins uint64

func Execute(job husk_worker_types.Job) witTypes.Result[[]byte, husk_worker_types.Fault] {
	for {
		spins++
	}
}
