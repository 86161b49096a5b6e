// Package contract is the domain of the activation-code verification service: the wire
// contract (resources, outcomes and error codes, state derivation, ids, request signing),
// every type the services and adapters exchange, and the error kinds with their one HTTP
// table. It imports nothing of the project (api/layers_test.go checks it).
package contract
