import AudioToolbox

/// A result code in words, for messages: "no such file (-43)", as `jaq info` and Apple's
/// examples print it, or "error 'xyz?'" for a code without words. `file`: the code came from
/// opening or reading an audio file.
func describe(_ status: OSStatus, file: Bool) -> String {
    let code = fourCharacterCode(status)
    return statusMessage(status, readingFile: file).map { "\($0) (\(code))" } ?? "error \(code)"
}

/// For a queue or converter refused between two different sample rates ('fmt?'): why, when
/// this installation cannot convert rates at all (libsoxr missing); nil otherwise.
func rateConversionUnavailable(_ status: OSStatus, from source: Double, to destination: Double?) -> String? {
    guard status == kAudioConverterErr_FormatNotSupported, let destination, source != destination else { return nil }
    return sampleRateConversionUnavailable
}
