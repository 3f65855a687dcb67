import CAudioToolbox

// Channel count changes: kAudioConverterChannelMap, and the routing without one.

/// Which input channel feeds each output channel (-1: silence), kAudioConverterChannelMap's array.
struct ChannelRouting {
    let inputChannels: Int
    private(set) var map: [Int32]

    /// Apple's routing without a map (AudioConverter.h, kAudioConverterChannelMap): the first
    /// min(I, O) inputs go to the first outputs, further inputs are dropped and further outputs
    /// are zero; as Apple's converters do, mono to stereo goes to both channels.
    init(input: Int, output: Int) {
        inputChannels = input
        if input == 1 && output == 2 {
            map = [0, 0]
        } else {
            map = (0..<output).map { $0 < input ? Int32($0) : -1 }
        }
        isIdentity = Self.identity(map, inputs: input)
    }

    var outputChannels: Int { map.count }

    /// True when output channel c is input channel c for every c (nothing to copy).
    private(set) var isIdentity = false

    private static func identity(_ map: [Int32], inputs: Int) -> Bool {
        inputs == map.count && map.enumerated().allSatisfy { Int($1) == $0 }
    }

    /// Sets the map from kAudioConverterChannelMap's bytes: one SInt32 per output channel,
    /// each -1 or an input channel; '!siz' for another size, kAudio_ParamError for a bad index.
    mutating func set(_ data: UnsafeRawPointer?, _ size: UInt32) throws {
        let stride = MemoryLayout<Int32>.size
        guard Int(size) == outputChannels * stride else {
            throw AudioToolboxError(kAudioConverterErr_BadPropertySizeError, "the map is \(outputChannels) SInt32s, not \(size) bytes")
        }
        guard let data else { throw AudioToolboxError(kAudio_ParamError, "NULL inPropertyData") }
        let values = (0..<outputChannels).map { data.loadUnaligned(fromByteOffset: $0 * stride, as: Int32.self) }
        if let bad = values.first(where: { $0 < -1 || $0 >= Int32(inputChannels) }) {
            throw AudioToolboxError(kAudio_ParamError, "channel map entry \(bad): the input has \(inputChannels) channels")
        }
        map = values
        isIdentity = Self.identity(values, inputs: inputChannels)
    }

    /// Routes `frames` frames of `source` (input channels) into `destination` (output channels).
    func route(_ source: UnsafePointer<UnsafeMutablePointer<Float>>, frames: Int,
               into destination: UnsafePointer<UnsafeMutablePointer<Float>>) {
        for (c, from) in map.enumerated() {
            if from < 0 {
                destination[c].update(repeating: 0, count: frames)
            } else {
                destination[c].update(from: source[Int(from)], count: frames)
            }
        }
    }
}
