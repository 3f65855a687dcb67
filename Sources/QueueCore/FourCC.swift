/// A four-character code as Apple's tools print it: `'fmt?'` (quoted) or `fmt?` when all four
/// bytes are printable ASCII, else the number in decimal (`-43`), as `OSStatus` values are.
///
/// The one renderer of format IDs, file types, property IDs and result codes in every module.
public func fourCharacterCode(_ code: UInt32, quoted: Bool = true) -> String {
    let bytes = [UInt8(code >> 24), UInt8((code >> 16) & 0xFF), UInt8((code >> 8) & 0xFF), UInt8(code & 0xFF)]
    guard bytes.allSatisfy({ (0x20..<0x7F).contains($0) }) else { return String(Int32(bitPattern: code)) }
    let text = String(decoding: bytes, as: UTF8.self)
    return quoted ? "'\(text)'" : text
}

/// A result code (`OSStatus`) as Apple prints it: `'fmt?'` for four-char codes, else `-50`.
public func fourCharacterCode(_ status: Int32, quoted: Bool = true) -> String {
    fourCharacterCode(UInt32(bitPattern: status), quoted: quoted)
}
