// The plain JavaScript types of setting values, apart from their conversion (setting-value.ts) so
// that the change and handle types can name them without importing the converter and, through
// it, the error classes.

/**
 * A setting value. Numbers must be safe integers (the wire type is int64); integers read back
 * from the gateway are always `bigint` so that no value is rounded.
 */
export type SettingInput = string | boolean | number | bigint | Uint8Array;

/** A setting value as read from the gateway. */
export type SettingOutput = string | boolean | bigint | Uint8Array;
