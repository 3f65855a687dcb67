import CAudioToolbox
import Synchronization

/// The AudioFileIDs that are open. An AudioFileID is the address of its `AudioFileHandle` object; the
/// registry holds the strong reference (taken at create/open, dropped at close), so an ID that
/// was closed, or was never one, is refused with a result code instead of being dereferenced.
enum AudioFileRegistry {
    private static let open = Mutex<[UInt: any AudioFileHandle]>([:])

    /// Registers a new file and returns its ID.
    static func register(_ file: any AudioFileHandle) -> AudioFileID {
        let id = OpaquePointer(Unmanaged.passUnretained(file as AnyObject).toOpaque())
        open.withLock { $0[key(id)] = file }
        return id
    }

    /// The file behind `id`.
    /// - Throws: kAudio_ParamError for NULL, kAudioFileNotOpenError for an ID that is not open.
    static func file(_ id: AudioFileID?) throws(AudioToolboxError) -> any AudioFileHandle {
        guard let id else { throw AudioToolboxError(kAudio_ParamError, "the AudioFileID is NULL") }
        guard let file = open.withLock({ $0[key(id)] }) else {
            throw AudioToolboxError(kAudioFileNotOpenError, "the AudioFileID is not an open file")
        }
        return file
    }

    /// Forgets `id`; the object goes away once no call is using it.
    static func unregister(_ id: AudioFileID) {
        _ = open.withLock { $0.removeValue(forKey: key(id)) }
    }

    private static func key(_ id: AudioFileID) -> UInt {
        UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(id)))
    }
}
