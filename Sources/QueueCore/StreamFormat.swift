/// The data format of a queue's buffers: what an AudioStreamBasicDescription
/// says, validated for what a queue can convert to and from JACK's float.
public struct StreamFormat: Sendable, Equatable {
    /// How samples are encoded.
    public enum Encoding: Sendable, Equatable {
        /// Linear PCM (kAudioFormatLinearPCM).
        case linearPCM
        /// ITU G.711 µ-law, one byte per sample (kAudioFormatULaw).
        case muLaw
        /// ITU G.711 A-law, one byte per sample (kAudioFormatALaw).
        case aLaw
    }

    /// Frames per second; 0 on an input queue means "the server's rate".
    public var sampleRate: Double
    public var encoding: Encoding
    public var isFloat: Bool
    public var isBigEndian: Bool
    public var isSignedInteger: Bool
    public var isPacked: Bool
    public var isAlignedHigh: Bool
    /// One plane per channel in a buffer instead of interleaved frames (a jaq extension:
    /// Apple's queues take interleaved data only). `bytesPerFrame` still counts every channel.
    public var isNonInterleaved: Bool
    /// Bytes of one frame of every channel (for non-interleaved data too, unlike an ASBD's).
    public var bytesPerFrame: Int
    public var channelCount: Int
    public var bitsPerChannel: Int

    /// Bytes of one sample of one channel.
    public var bytesPerSample: Int { bytesPerFrame / max(channelCount, 1) }

    public init(
        sampleRate: Double, encoding: Encoding, isFloat: Bool = false, isBigEndian: Bool = false,
        isSignedInteger: Bool = true, isPacked: Bool = true, isAlignedHigh: Bool = false,
        isNonInterleaved: Bool = false, bytesPerFrame: Int, channelCount: Int, bitsPerChannel: Int
    ) {
        self.sampleRate = sampleRate
        self.encoding = encoding
        self.isFloat = isFloat
        self.isBigEndian = isBigEndian
        self.isSignedInteger = isSignedInteger
        self.isPacked = isPacked
        self.isAlignedHigh = isAlignedHigh
        self.isNonInterleaved = isNonInterleaved
        self.bytesPerFrame = bytesPerFrame
        self.channelCount = channelCount
        self.bitsPerChannel = bitsPerChannel
    }

    /// Interleaved packed linear PCM, native (little) endian.
    public static func linearPCM(sampleRate: Double, channels: Int, bits: Int, float: Bool = false) -> StreamFormat {
        StreamFormat(
            sampleRate: sampleRate, encoding: .linearPCM, isFloat: float, isSignedInteger: !float,
            bytesPerFrame: channels * ((bits + 7) / 8), channelCount: channels, bitsPerChannel: bits)
    }

    /// The largest channel count a queue takes.
    public static let maximumChannels = 64

    /// Checks that a queue can convert this format; throws `.unsupportedFormat` with the reason.
    /// - Parameter allowsZeroRate: input queues take 0 (the server's rate).
    public func validate(allowsZeroRate: Bool, bytesPerPacket: Int, framesPerPacket: Int) throws {
        func fail(_ why: String) throws -> Never { throw QueueError.unsupportedFormat(why) }
        guard sampleRate.isFinite, sampleRate >= 0 else { try fail("sample rate \(sampleRate)") }
        if sampleRate == 0 && !allowsZeroRate { try fail("sample rate 0") }
        if sampleRate != 0 && (sampleRate < 1000 || sampleRate > 768_000) { try fail("sample rate \(sampleRate) Hz") }
        guard channelCount >= 1, channelCount <= Self.maximumChannels else {
            try fail("\(channelCount) channels (1...\(Self.maximumChannels))")
        }
        guard framesPerPacket == 1 else { try fail("\(framesPerPacket) frames per packet (1 for PCM)") }
        guard bytesPerPacket == bytesPerFrame else { try fail("bytes per packet \(bytesPerPacket) != bytes per frame \(bytesPerFrame)") }
        guard bytesPerFrame > 0, bytesPerFrame % channelCount == 0 else {
            try fail("\(bytesPerFrame) bytes per frame for \(channelCount) channels")
        }
        let sampleBytes = bytesPerSample
        switch encoding {
        case .muLaw, .aLaw:
            guard sampleBytes == 1, bitsPerChannel == 8 else { try fail("G.711 needs 8 bits in 1 byte per sample") }
        case .linearPCM:
            guard bitsPerChannel >= 8, bitsPerChannel <= sampleBytes * 8 else {
                try fail("\(bitsPerChannel) bits in \(sampleBytes) bytes per sample")
            }
            if isFloat {
                guard (bitsPerChannel == 32 && sampleBytes == 4) || (bitsPerChannel == 64 && sampleBytes == 8) else {
                    try fail("float samples must be 32 bits in 4 bytes or 64 bits in 8")
                }
            } else {
                guard [1, 2, 3, 4].contains(sampleBytes) else { try fail("\(sampleBytes)-byte integer samples") }
                guard bitsPerChannel <= 32 else { try fail("\(bitsPerChannel)-bit integers") }
                if sampleBytes == 1 && bitsPerChannel != 8 { try fail("\(bitsPerChannel) bits in one byte") }
            }
        }
    }

    /// A one-line description for messages: "2 ch 48000 Hz 16-bit signed little-endian integer".
    public var summary: String {
        let rate = sampleRate == 0 ? "device rate" : "\(Int(sampleRate)) Hz"
        let kind: String
        switch encoding {
        case .muLaw: kind = "µ-law"
        case .aLaw: kind = "A-law"
        case .linearPCM:
            let endian = bytesPerSample > 1 ? (isBigEndian ? " big-endian" : " little-endian") : ""
            if isFloat { kind = "\(bitsPerChannel)-bit float\(endian)" }
            else { kind = "\(bitsPerChannel)-bit \(isSignedInteger ? "signed" : "unsigned")\(endian) integer" }
        }
        return "\(channelCount) ch \(rate) \(kind)"
    }
}
