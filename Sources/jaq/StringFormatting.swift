import Glibc

extension String {
    /// Numbers as printf formats them (`%d`, `%02d`, `%3d`, `%5.1f`, `%.2f`, `%04.1f`): what
    /// Foundation's `String(format:)` gives for them, through the C library's `vsnprintf`, so
    /// that the tool need not load Foundation. Strings go in by interpolation: there is no `%@`.
    init(cFormat format: String, _ arguments: CVarArg...) {
        self.init(cFormat: format, arguments: arguments)
    }

    /// `String(cFormat:)` with its arguments in an array.
    init(cFormat format: String, arguments: [CVarArg]) {
        let length = withVaList(arguments) { vsnprintf(nil, 0, format, $0) }
        guard length > 0 else {
            self = ""
            return
        }
        var bytes = [CChar](repeating: 0, count: Int(length) + 1)
        _ = withVaList(arguments) { vsnprintf(&bytes, bytes.count, format, $0) }
        self = String(decoding: bytes.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension String {
    /// The text cut or filled with spaces to `width` UTF-16 units, as Foundation's
    /// `padding(toLength: width, withPad: " ", startingAt: 0)` makes it (columns of names).
    func padded(toWidth width: Int) -> String {
        let units = utf16.count
        guard units != width else { return self }
        if units > width { return String(decoding: Array(utf16.prefix(width)), as: UTF16.self) }
        return self + String(repeating: " ", count: width - units)
    }
}
