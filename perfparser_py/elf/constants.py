"""ELF's numbers, by their names in the gABI and the psABIs (elf.h)."""

PT_LOAD = 1
PT_NOTE = 4
PF_X = 1
PF_W = 2
SHT_SYMTAB = 2
SHT_RELA = 4
SHT_NOTE = 7
SHT_NOBITS = 8
SHT_REL = 9
SHT_DYNSYM = 11
SHF_ALLOC = 0x2
SHF_COMPRESSED = 0x800
DT_NULL = 0
DT_PLTGOT = 3
EM_386 = 3
EM_ARM = 40
EM_X86_64 = 62
EM_AARCH64 = 183
EM_RISCV = 243
R_X86_64_IRELATIVE = 37
R_AARCH64_IRELATIVE = 1032
R_386_IRELATIVE = 42
R_ARM_IRELATIVE = 160

MACHINES = {
    2: "sparc", 3: "i386", 8: "mips", 18: "sparc", 20: "ppc", 21: "ppc64", 22: "s390",
    42: "sh", 43: "sparcv9", 40: "arm", 62: "x86_64", 183: "aarch64", 243: "riscv",
    258: "loongarch",
}
