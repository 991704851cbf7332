package message

// SYSFLAG bits of a record (RocketMQ MessageSysFlag). These values are part
// of the on-disk and wire format.
const (
	// SysFlagCompressed marks a body compressed by the producer.
	SysFlagCompressed int32 = 0x1
	// SysFlagMultiTags marks a message whose topic uses the MULTI_TAG filter
	// type.
	SysFlagMultiTags int32 = 0x2
	// SysFlagTransactionMask selects the transaction type bits.
	SysFlagTransactionMask int32 = 0xC
	// SysFlagBornHostV6 marks a 16-byte (IPv6) born host address.
	SysFlagBornHostV6 int32 = 0x10
	// SysFlagStoreHostV6 marks a 16-byte (IPv6) store host address.
	SysFlagStoreHostV6 int32 = 0x20
	// SysFlagNeedUnwrap marks a batch record that must be unwrapped (5.x).
	SysFlagNeedUnwrap int32 = 0x40
	// SysFlagInnerBatch marks an inner-batch record (5.x batch consume queue).
	SysFlagInnerBatch int32 = 0x80
	// SysFlagCompressionTypeMask selects the compression type bits (8-10).
	SysFlagCompressionTypeMask int32 = 0x700
	// SysFlagCompressionTypeShift is the shift of the compression type bits.
	SysFlagCompressionTypeShift = 8
)

// Transaction types stored in the SysFlagTransactionMask bits.
const (
	// TransactionNotType is an ordinary (non-transactional) message.
	TransactionNotType int32 = 0x0
	// TransactionPreparedType is a prepared (half) transactional message.
	TransactionPreparedType int32 = 0x4
	// TransactionCommitType is a committed transactional message.
	TransactionCommitType int32 = 0x8
	// TransactionRollbackType is a rolled-back transactional message.
	TransactionRollbackType int32 = 0xC
)

// Compression types stored in the SysFlagCompressionTypeMask bits (after
// shifting by SysFlagCompressionTypeShift).
const (
	// CompressionLegacyZlib is the 4.x value: zlib when SysFlagCompressed is
	// set.
	CompressionLegacyZlib int32 = 0
	// CompressionLZ4 is LZ4 (5.x Java producers).
	CompressionLZ4 int32 = 1
	// CompressionZstd is Zstandard (5.x Java producers).
	CompressionZstd int32 = 2
	// CompressionZlib is zlib, stated explicitly (5.x).
	CompressionZlib int32 = 3
)

// TransactionType returns the transaction type bits of sysFlag, one of the
// Transaction*Type constants.
func TransactionType(sysFlag int32) int32 { return sysFlag & SysFlagTransactionMask }

// WithTransactionType returns sysFlag with its transaction type replaced by
// txType (which is masked to SysFlagTransactionMask).
func WithTransactionType(sysFlag, txType int32) int32 {
	return sysFlag&^SysFlagTransactionMask | txType&SysFlagTransactionMask
}

// CompressionType returns the compression type bits of sysFlag, one of the
// Compression* constants. It is meaningful only when IsCompressed is true.
func CompressionType(sysFlag int32) int32 {
	return (sysFlag & SysFlagCompressionTypeMask) >> SysFlagCompressionTypeShift
}

// IsCompressed reports whether sysFlag marks a compressed body.
func IsCompressed(sysFlag int32) bool { return sysFlag&SysFlagCompressed != 0 }

// IsZlibCompressed reports whether sysFlag marks a zlib-compressed body, the
// only compression Ferry and the Go client can inflate.
func IsZlibCompressed(sysFlag int32) bool {
	if !IsCompressed(sysFlag) {
		return false
	}
	t := CompressionType(sysFlag)
	return t == CompressionLegacyZlib || t == CompressionZlib
}

// IsConsumable reports whether a record with sysFlag goes into a consume
// queue: ordinary and committed messages do, prepared and rolled-back ones do
// not (their queue offset is 0).
func IsConsumable(sysFlag int32) bool {
	t := TransactionType(sysFlag)
	return t == TransactionNotType || t == TransactionCommitType
}
