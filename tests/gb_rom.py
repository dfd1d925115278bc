"""Homebrew Game Boy ROMs for the Pokémon Red binding's tests: no commercial ROM is ever needed.

`build_gb_rom()` assembles a 32 KiB cartridge with a valid header. Its program is either a two-instruction
spin (`walker=False`: the RAM stays as it was, so every reward term reads zero), or a tiny game, the
walker, that writes the RAM bytes the binding reads the way Pokémon Red does, once per frame:

- d-pad: the player's x (0xD362) and y (0xD361) move one tile, like walking;
- A adds 1 to the first event flag byte (0xD747), B to the last (0xD886); start adds 1 to the map id (0xD35E);
- after each accepted press the game is busy for `busy_frames` frames: wJoyIgnore (0xCD6B) is 0xFF and every
  press is ignored, as during Pokémon's walking and text animations, so a press in those frames is lost;
- a press is a button going down (an edge, seen even while busy), so a button held since before the busy
  frames ended does not count; PRESSES (0xC002) counts the accepted presses.

The assembler below knows the dozen instructions the walker uses; it is ours because the tests must not
need a Game Boy toolchain (RGBDS) installed.
"""

PREV, BUSY, PRESSES, FRAMES = 0xC000, 0xC001, 0xC002, 0xC003
JOY_IGNORE, MAP_ID, PLAYER_Y, PLAYER_X = 0xCD6B, 0xD35E, 0xD361, 0xD362
EVENT_FIRST, EVENT_LAST = 0xD747, 0xD886
START_X, START_Y = 10, 10
ORIGIN = 0x150

_JR = {None: 0x18, 'nz': 0x20, 'z': 0x28, 'nc': 0x30, 'c': 0x38}


class _Asm:
    """Bytes at ORIGIN, labels, and relative jumps resolved at the end."""

    def __init__(self):
        self.code = bytearray()
        self.labels = {}
        self.jumps = []  # (offset byte's index, label)

    def emit(self, *data):
        self.code += bytes(data)

    def label(self, name):
        self.labels[name] = ORIGIN + len(self.code)

    def jr(self, label, cond=None):
        self.emit(_JR[cond], 0)
        self.jumps.append((len(self.code) - 1, label))

    def ld_a_mem(self, addr):  # ld a, [addr]
        self.emit(0xFA, addr & 0xFF, addr >> 8)

    def ld_mem_a(self, addr):  # ld [addr], a
        self.emit(0xEA, addr & 0xFF, addr >> 8)

    def ld_hl(self, addr):  # ld hl, addr
        self.emit(0x21, addr & 0xFF, addr >> 8)

    def assemble(self):
        for index, label in self.jumps:
            offset = self.labels[label] - (ORIGIN + index + 1)
            assert -128 <= offset <= 127, f'jr to {label} is too far'
            self.code[index] = offset & 0xFF
        return bytes(self.code)


def walker_program(busy_frames):
    if not 0 <= busy_frames <= 255:
        raise ValueError('busy_frames is one byte')
    a = _Asm()
    a.emit(0xF3)                       # di: no interrupts, the loop polls LY for the frame
    a.emit(0x31, 0xFE, 0xDF)           # ld sp, 0xDFFE
    a.emit(0xAF)                       # xor a
    for addr in (PREV, BUSY, PRESSES, FRAMES, JOY_IGNORE, MAP_ID, EVENT_FIRST, EVENT_LAST):
        a.ld_mem_a(addr)
    a.emit(0x3E, START_X)
    a.ld_mem_a(PLAYER_X)
    a.emit(0x3E, START_Y)
    a.ld_mem_a(PLAYER_Y)

    a.label('frame')                   # once per frame: wait for the line after the last, then for VBlank
    a.label('leave_vblank')
    a.emit(0xF0, 0x44, 0xFE, 144)      # ldh a, [LY]; cp 144
    a.jr('leave_vblank', 'z')
    a.label('enter_vblank')
    a.emit(0xF0, 0x44, 0xFE, 144)
    a.jr('enter_vblank', 'nz')

    # b = buttons held: d-pad in the high nibble (down up left right), A B select start in the low one
    a.emit(0x3E, 0x20, 0xE0, 0x00)     # ld a, 0x20; ldh [P1], a: select the d-pad
    a.emit(0xF0, 0x00, 0xF0, 0x00)     # read twice to let the lines settle
    a.emit(0x2F, 0xE6, 0x0F, 0xCB, 0x37, 0x47)   # cpl; and 0x0F; swap a; ld b, a
    a.emit(0x3E, 0x10, 0xE0, 0x00)     # select the buttons
    a.emit(0xF0, 0x00, 0xF0, 0x00)
    a.emit(0x2F, 0xE6, 0x0F, 0xB0, 0x47)         # cpl; and 0x0F; or b; ld b, a
    a.emit(0x3E, 0x30, 0xE0, 0x00)     # deselect both
    # c = newly pressed = held & ~previous; previous = held
    a.ld_a_mem(PREV)
    a.emit(0x2F, 0xA0, 0x4F)           # cpl; and b; ld c, a
    a.emit(0x78)                       # ld a, b
    a.ld_mem_a(PREV)

    a.ld_a_mem(BUSY)
    a.emit(0xA7)                       # and a
    a.jr('ready', 'z')
    a.emit(0x3D)                       # dec a
    a.ld_mem_a(BUSY)
    a.jr('frame_end', 'nz')
    a.ld_mem_a(JOY_IGNORE)             # a == 0: control is back from the next frame on
    a.jr('frame_end')

    a.label('ready')
    a.emit(0x79, 0xA7)                 # ld a, c; and a
    a.jr('frame_end', 'z')
    a.ld_hl(PRESSES)
    a.emit(0x34)                       # inc [hl]
    for bit, addr, opcode in ((7, PLAYER_Y, 0x34), (6, PLAYER_Y, 0x35), (5, PLAYER_X, 0x35), (4, PLAYER_X, 0x34),
                              (0, EVENT_FIRST, 0x34), (1, EVENT_LAST, 0x34), (3, MAP_ID, 0x34)):
        skip = f'skip_{bit}'
        a.emit(0xCB, 0x47 + 8 * bit)   # bit n, a
        a.jr(skip, 'z')
        a.ld_hl(addr)
        a.emit(opcode)                 # inc [hl] / dec [hl]
        a.label(skip)
    if busy_frames:
        a.emit(0x3E, busy_frames)
        a.ld_mem_a(BUSY)
        a.emit(0x3E, 0xFF)
        a.ld_mem_a(JOY_IGNORE)

    a.label('frame_end')
    a.ld_hl(FRAMES)
    a.emit(0x34)
    a.emit(0xC3, 0x00, 0x00)           # jp frame (patched below: an absolute jump)
    code = bytearray(a.assemble())
    frame = a.labels['frame']
    code[-2:] = bytes([frame & 0xFF, frame >> 8])
    return bytes(code)


SPIN = bytes([0xF3, 0x18, 0xFE])  # di; jr -2


def build_gb_rom(title=b'PUFFER TEST', cartridge_type=0x00, ram_size=0x00, walker=False, busy_frames=0):
    """A 32 KiB Game Boy ROM, header checksums correct: the spin, or the walker (see the module's doc).

    The Nintendo logo area is left empty: PyBoy does not verify it (only real hardware's boot ROM does).
    """
    rom = bytearray(32 * 1024)
    rom[0x100:0x104] = bytes([0x00, 0xC3, 0x50, 0x01])  # entry point: nop; jp 0x0150
    rom[0x134:0x134 + len(title)] = title
    rom[0x147], rom[0x148], rom[0x149] = cartridge_type, 0x00, ram_size  # 0x00: 32 KiB, no mapper
    program = walker_program(busy_frames) if walker else SPIN
    rom[ORIGIN:ORIGIN + len(program)] = program
    check = 0
    for byte in rom[0x134:0x14D]:
        check = (check - byte - 1) & 0xFF
    rom[0x14D] = check  # header checksum: the boot ROM and PyBoy refuse a cartridge without it
    total = sum(rom) & 0xFFFF  # global checksum, over every byte but its own two (still zero here)
    rom[0x14E], rom[0x14F] = total >> 8, total & 0xFF
    return bytes(rom)


BOOT_FRAMES = 100  # PyBoy runs the console's boot ROM first: about 65 frames before our program starts


def save_booted_state(rom_path, state_path):
    """A PyBoy save state of `rom_path` past the boot ROM, for the env's state_path: what a user does with
    Pokémon Red (a state after the intro), and the walker takes input from its first step on."""
    from pyboy import PyBoy
    pyboy = PyBoy(str(rom_path), window='null', sound_emulated=False, log_level='ERROR')
    pyboy.set_emulation_speed(0)
    pyboy.tick(BOOT_FRAMES, False)
    with open(state_path, 'wb') as f:
        pyboy.save_state(f)
    pyboy.stop(save=False)
    return str(state_path)
