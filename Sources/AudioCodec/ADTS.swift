/// ADTS, the raw AAC stream ffmpeg's command line writes and reads (`-f adts`): each packet
/// behind a 7-byte header (9 with a CRC) naming its profile, rate and channels. The tests and
/// benchmarks use it to move AAC packets to and from ffmpeg without a container.
public enum ADTS {
    /// The packets of an ADTS stream and the AudioSpecificConfig its first header describes;
    /// stops at the first damaged header.
    public static func split(_ data: [UInt8]) -> (packets: [[UInt8]], audioSpecificConfig: [UInt8]) {
        var packets: [[UInt8]] = []
        var config: [UInt8] = []
        var i = 0
        while i + 7 <= data.count, data[i] == 0xFF, data[i + 1] & 0xF0 == 0xF0 {
            let header = data[i + 1] & 1 == 1 ? 7 : 9
            let length = Int(data[i + 3] & 3) << 11 | Int(data[i + 4]) << 3 | Int(data[i + 5]) >> 5
            guard length > header, i + length <= data.count else { break }
            if config.isEmpty {
                let objectType = (data[i + 2] >> 6) + 1
                let rateIndex = (data[i + 2] >> 2) & 0xF
                let channels = (data[i + 2] & 1) << 2 | data[i + 3] >> 6
                config = [objectType << 3 | rateIndex >> 1, (rateIndex & 1) << 7 | channels << 3]
            }
            packets.append(Array(data[(i + header)..<(i + length)]))
            i += length
        }
        return (packets, config)
    }

    /// AAC-LC packets as an ADTS stream (`rateIndex` 3 = 48 kHz, 4 = 44.1 kHz).
    public static func join(_ packets: [[UInt8]], rateIndex: UInt8 = 3, channels: UInt8 = 2) -> [UInt8] {
        packets.flatMap { p -> [UInt8] in
            let n = p.count + 7
            return [0xFF, 0xF1, (1 << 6) | (rateIndex << 2) | (channels >> 2), ((channels & 3) << 6) | UInt8(n >> 11),
                    UInt8((n >> 3) & 0xFF), UInt8((n & 7) << 5) | 0x1F, 0xFC] + p
        }
    }
}
