import ArgumentParser
import AudioToolbox
import FoundationEssentials
import Glibc

/// A file opened with Audio File Services to be played through a queue: its data format and length.
struct PlayableFile {
    let id: AudioFileID
    let format: AudioStreamBasicDescription
    let packetCount: Int64

    /// Opens `path`; throws a CLIError naming the file and the reason. The caller closes `id`.
    init(path: String) throws {
        var file: AudioFileID?
        let status = AudioFileOpenURL(URL(fileURLWithPath: path) as CFURL, .readPermission, 0, &file)
        guard status == noErr, let file else {
            throw CLIError("\(path): \(describe(status, file: true))")
        }
        var asbd = AudioStreamBasicDescription()
        var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
        var result = AudioFileGetProperty(file, kAudioFilePropertyDataFormat, &size, &asbd)
        guard result == noErr else {
            AudioFileClose(file)
            throw CLIError("\(path): cannot read its data format: \(describe(result, file: true))")
        }
        var packets: UInt64 = 0
        size = 8
        result = AudioFileGetProperty(file, kAudioFilePropertyAudioDataPacketCount, &size, &packets)
        guard result == noErr else {
            AudioFileClose(file)
            throw CLIError("\(path): cannot read its length: \(describe(result, file: true))")
        }
        id = file
        format = asbd
        packetCount = Int64(packets)
    }

    /// Packets of one queue buffer: a quarter second, and for linear PCM at least
    /// `minimumPCMPackets` (one frame a packet).
    func packetsPerBuffer(minimumPCMPackets: Int) -> UInt32 {
        format.mFramesPerPacket > 1 ? PacketPlayback.packetsPerBuffer(format) : UInt32(max(minimumPCMPackets, Int(format.mSampleRate / 4)))
    }
}

/// `--volume` and `--pan` of `jaq play` and `jaq render`: per file, or for every file.
struct LevelOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Volume 0...1 of file N (or every file).", valueName: "[N:]volume"))
    var volume: [String] = []

    @Option(name: .long, help: ArgumentHelp("Pan -1...1 of file N (or every file): balance for stereo, position for mono.", valueName: "[N:]pan"))
    var pan: [String] = []
}
