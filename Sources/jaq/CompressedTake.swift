import AudioToolbox
import FoundationEssentials
import Glibc

/// `jaq record -f m4a` (AAC, or ALAC with --codec alac) and `-f caf --codec aac|alac`: what
/// -f, --codec, -b and --bitrate ask for. An encoded take is recorded as every take is (the
/// same queue, writer, triggers, pre-roll, latency compensation, gaps and tape machine); its
/// files encode the take's frames from the first (`AudioTakeFile.Format.Encoding`).
struct CompressedTake {
    let formatID: AudioFormatID
    let fileType: AudioFileTypeID
    let fileExtension: String
    /// ALAC's source depth flag (16 or 24 bits), 0 for AAC.
    let formatFlags: AudioFormatFlags
    /// AAC's bit rate in bits per second (--bitrate), nil for the queue's default.
    let bitRate: UInt32?

    /// The compressed take `format` and `codec` ask for; nil for the PCM and libsndfile formats.
    /// - Throws: CLIError (exit 2) for a codec jaq does not record or one the format cannot hold.
    init?(format: String, codec: String?, bits: String, bitRate: String? = nil) throws {
        let lowered = format.lowercased()
        guard lowered == "m4a" || (lowered == "caf" && codec != nil) else {
            if let codec { throw CLIError("--codec \(codec) is for -f m4a or -f caf", exitCode: CLIError.usage) }
            return nil
        }
        switch (codec ?? "aac").lowercased() {
        case "aac":
            formatID = kAudioFormatMPEG4AAC
            formatFlags = 0
        case "alac":
            formatID = kAudioFormatAppleLossless
            switch bits {
            case "16": formatFlags = 1  // kAppleLosslessFormatFlag_16BitSourceData
            case "24": formatFlags = 3  // kAppleLosslessFormatFlag_24BitSourceData
            default: throw CLIError("-b \(bits): ALAC records 16 or 24-bit sources", exitCode: CLIError.usage)
            }
        default:
            throw CLIError("--codec \(codec ?? ""): jaq records aac or alac", exitCode: CLIError.usage)
        }
        if let bitRate {
            guard formatID == kAudioFormatMPEG4AAC else { throw CLIError("--bitrate \(bitRate) is for AAC takes; ALAC is lossless", exitCode: CLIError.usage) }
            self.bitRate = try Self.bitsPerSecond(bitRate)
        } else {
            self.bitRate = nil
        }
        fileType = lowered == "m4a" ? kAudioFileM4AType : kAudioFileCAFType
        fileExtension = lowered
    }
}

extension CompressedTake {
    /// The take files' format.
    var format: AudioTakeFile.Format {
        AudioTakeFile.Format(name: fileExtension, fileExtension: fileExtension,
                             encoding: .init(formatID: formatID, formatFlags: formatFlags, fileType: fileType, bitRate: bitRate))
    }

    /// --bitrate's value in bits per second: "128" and "128k" are kbit/s, "128000" bit/s.
    static func bitsPerSecond(_ text: String) throws -> UInt32 {
        let lowered = text.lowercased()
        let digits = lowered.hasSuffix("k") ? String(lowered.dropLast()) : lowered
        guard let value = Double(digits), value.isFinite, value > 0, value < 100_000_000 else {
            throw CLIError("--bitrate \(text): a bit rate in kbit/s (128, 128k) or bit/s (128000)", exitCode: CLIError.usage)
        }
        let kilo = lowered.hasSuffix("k") || value < 1000
        return UInt32((kilo ? value * 1000 : value).rounded())
    }
}
