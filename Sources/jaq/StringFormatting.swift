/// A number `String(cFormat:)` formats: an integer (`%d`) or a floating-point value (`%f`).
///
/// Not `CVarArg`: building a C `va_list` asks the Swift runtime, for every argument's type,
/// whether it conforms to `_CVarArgPassedAsDouble`, and the first such question for a type
/// scans every protocol conformance record of the process. For jaq that took about 1.5 ms of a
/// take's start-up (issue #29); these conformances are known when compiling.
protocol CFormatArgument {
    /// The value as the conversion `spec` (`d` or `f`) prints it.
    func cFormatted(_ spec: CFormatSpec) -> String
}

/// One printf conversion: `%[0][width][.precision]d` or `...f`.
struct CFormatSpec {
    var zeroPad = false
    var width = 0
    var precision: Int?
    var conversion: Character = "d"

    /// `digits` (a sign first, if any) filled to the width, with zeros after the sign or spaces before it.
    func padded(_ digits: String) -> String {
        let count = digits.utf8.count
        guard count < width else { return digits }
        let fill = width - count
        guard zeroPad else { return String(repeating: " ", count: fill) + digits }
        if digits.hasPrefix("-") { return "-" + String(repeating: "0", count: fill) + digits.dropFirst() }
        return String(repeating: "0", count: fill) + digits
    }
}

extension Int: CFormatArgument {
    func cFormatted(_ spec: CFormatSpec) -> String {
        spec.conversion == "f" ? Double(self).cFormatted(spec) : spec.padded(String(self))
    }
}

extension Double: CFormatArgument {
    func cFormatted(_ spec: CFormatSpec) -> String {
        guard spec.conversion == "f", isFinite else {
            // %d of a Double: its whole part, as long as an Int holds it.
            return Int(exactly: rounded(.towardZero)).map { $0.cFormatted(spec) } ?? spec.padded(String(self))
        }
        return spec.padded(fixed(precision: spec.precision ?? 6))
    }

    /// The value with `precision` decimals, rounded as printf rounds: the exact binary value to
    /// the nearest, ties to even (so 0.15, a little less than 0.15 in binary, gives "0.1").
    /// The scaled value is compared with the rounding points by fused multiply-adds, which are
    /// exact in sign. (glibc's `strfromd` would do it, but Swift does not see it declared.)
    func fixed(precision: Int) -> String {
        let sign = self.sign == .minus ? "-" : ""
        // The whole part and the fraction, both exact; the fraction is what is rounded.
        let whole = magnitude.rounded(.towardZero)
        let fraction = magnitude - whole
        guard whole < 0x1p63 else { return sign + String(magnitude) }  // beyond anything jaq prints
        let precision = min(precision, 9)
        var scale = 1.0
        for _ in 0..<precision { scale *= 10 }
        // t: the largest integer with t <= fraction × scale, exactly.
        var t = (fraction * scale).rounded(.down)
        while t > 0 && (-t).addingProduct(fraction, scale) < 0 { t -= 1 }
        while (-(t + 1)).addingProduct(fraction, scale) >= 0 { t += 1 }
        let aboveHalf = (-(t + 0.5)).addingProduct(fraction, scale)
        if aboveHalf > 0 || (aboveHalf == 0 && t.truncatingRemainder(dividingBy: 2) == 1) { t += 1 }
        var units = UInt64(whole)
        if t == scale {
            units += 1
            t = 0
        }
        guard precision > 0 else { return sign + String(units) }
        let decimals = String(UInt64(t))
        return sign + String(units) + "." + String(repeating: "0", count: precision - decimals.count) + decimals
    }
}

extension Float: CFormatArgument {
    func cFormatted(_ spec: CFormatSpec) -> String { Double(self).cFormatted(spec) }
}

extension String {
    /// Numbers as printf formats them (`%d`, `%02d`, `%3d`, `%5.1f`, `%.2f`, `%04.1f`): what
    /// Foundation's `String(format:)` gives for them, so that the tool need not load
    /// Foundation. Strings go in by interpolation: there is no `%@`; `%%` is a percent sign.
    init(cFormat format: String, _ arguments: any CFormatArgument...) {
        self.init(cFormat: format, arguments: arguments)
    }

    /// `String(cFormat:)` with its arguments in an array.
    init(cFormat format: String, arguments: [any CFormatArgument]) {
        var result = ""
        var next = arguments.makeIterator()
        var characters = format.makeIterator()
        while let character = characters.next() {
            guard character == "%" else {
                result.append(character)
                continue
            }
            var spec = CFormatSpec()
            var inPrecision = false
            while let c = characters.next() {
                if c == "%" && spec.width == 0 && !inPrecision {
                    result.append("%")
                    break
                } else if c == "0" && spec.width == 0 && !inPrecision && !spec.zeroPad {
                    spec.zeroPad = true
                } else if c == "." {
                    inPrecision = true
                    spec.precision = 0
                } else if let digit = c.wholeNumberValue {
                    if inPrecision { spec.precision = spec.precision! * 10 + digit } else { spec.width = spec.width * 10 + digit }
                } else {
                    spec.conversion = c
                    if let argument = next.next() { result += argument.cFormatted(spec) }
                    break
                }
            }
        }
        self = result
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
