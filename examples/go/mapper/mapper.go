// `mapper`: classifies faults by code and by a JSON body field.
//
//   - `payment.declined`: business error named by the body's "reason";
//   - a body with a string "status": business status;
//   - codes starting with `validation.`: technical, not retryable;
//   - anything else (the host's `husk.*` codes too): technical.
package export_wit_world

import (
	"encoding/json"
	"strings"

	"wit_component/husk_worker_types"
)

func Classify(fault husk_worker_types.Fault) husk_worker_types.Classification {
	var body map[string]any
	_ = json.Unmarshal(fault.Body, &body) // a body that is not a JSON object has no fields
	if fault.Code == "payment.declined" {
		reason, found := body["reason"].(string)
		if !found {
			reason = "declined"
		}
		return husk_worker_types.MakeClassificationBusinessError(
			husk_worker_types.BusinessError{Code: reason, Message: "the payment was declined"})
	}
	if status, found := body["status"].(string); found {
		return husk_worker_types.MakeClassificationBusinessStatus(status)
	}
	if strings.HasPrefix(fault.Code, "validation.") {
		return husk_worker_types.MakeClassificationTechnicalNonRetryable("invalid request: " + fault.Code)
	}
	return husk_worker_types.MakeClassificationTechnical("technical fault " + fault.Code)
}
