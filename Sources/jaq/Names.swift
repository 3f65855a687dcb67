// The names jaq makes: JACK client names and take file names.

/// A name safe in a JACK client name or a file name.
func sanitized(_ text: String, limit: Int = 32) -> String {
    let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
    let mapped = String(text.map { allowed.contains($0) ? $0 : "_" })
    return String(mapped.prefix(limit))
}

/// A take's file name: `pattern` with each `{key}` of `fields` replaced by its value, in one
/// pass (a value is never searched for keys, so a track named `{n}` stays so); other braces
/// stay as they are.
func expandTakeName(_ pattern: String, _ fields: [(key: String, value: String)]) -> String {
    var result = ""
    var rest = pattern[...]
    while let open = rest.firstIndex(of: "{") {
        result += rest[..<open]
        rest = rest[open...]
        if let field = fields.first(where: { rest.hasPrefix("{\($0.key)}") }) {
            result += field.value
            rest = rest.dropFirst(field.key.count + 2)
        } else {
            result += "{"
            rest = rest.dropFirst()
        }
    }
    return result + rest
}

/// `number` in decimal, zero-padded to `width` digits.
func zeroPadded(_ number: Int, width: Int) -> String {
    let digits = String(number)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}
