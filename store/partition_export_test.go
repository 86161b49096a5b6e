package store

// Exported for the partition tests (package store_test).
const (
	LogMaintenanceLock = logMaintenanceLock
	CodeHistorySQL     = codeHistorySQL
)

// PartitionName is partitionName.
var PartitionName = partitionName
