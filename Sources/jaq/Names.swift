// The names jaq makes: JACK client names and take file names.

/// A name safe in a JACK client name or a file name.
/// ASCII letters, digits, `_`, `.` and `-` stay; any other character (a whole grapheme: "é",
/// an emoji, CR LF) becomes one `_`; at most `limit` characters. (Tested byte by byte: a `Set`
/// of the allowed characters, made per call, cost a 64-track take's start 0.2 ms of hashing.)
func sanitized(_ text: String, limit: Int = 32) -> String {
    var result = ""
    for character in text.prefix(limit) {
        let allowed = character.asciiValue.map { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"): true
            default: false
            }
        } ?? false
        result.append(allowed ? character : "_")
    }
    return result
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
