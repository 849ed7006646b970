package encryption_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cachekit-io/cachekit-go/encryption"
)

// A Manager built from the hex form of the master key seals values under
// the default tenant; a reader must present the identical AAD.
func ExampleManager() {
	key, err := encryption.ParseMasterKeyHex("6161616161616161616161616161616161616161616161616161616161616161")
	if err != nil {
		panic(err)
	}
	m, err := encryption.NewManager(encryption.Config{MasterKey: key})
	clear(key) // the Manager keeps no reference to it
	if err != nil {
		panic(err)
	}
	defer m.Close()

	aad := []byte("AAD built by the protocol package")
	sealed, d, err := m.EncryptNow(nil, []byte("hello"), aad)
	if d != nil {
		sealed, err = d.Wait(context.Background()) // not taken: static keys are derived at once
	}
	if err != nil {
		panic(err)
	}
	fmt.Println("tenant:", m.Tenant())
	fmt.Println("fingerprint:", m.Stats().Fingerprint)
	fmt.Println("sealed length:", len(sealed), "=", len("hello"), "+", encryption.Overhead)

	plain, _, err := m.DecryptNow(nil, sealed, aad)
	fmt.Printf("opened: %s %v\n", plain, err)

	_, _, err = m.DecryptNow(nil, sealed, []byte("another cache key"))
	fmt.Println("wrong AAD:", errors.Is(err, encryption.ErrAuthFailed))
	// Output:
	// tenant: default
	// fingerprint: 52d54c97f8e5efaa5bdf58a301f92726
	// sealed length: 33 = 5 + 28
	// opened: hello <nil>
	// wrong AAD: true
}

// Rotation: the new key encrypts, the old one still decrypts, and
// DecryptIndex says which key did.
func ExampleManager_DecryptIndex() {
	oldKey := make([]byte, encryption.KeySize)
	newKey := make([]byte, encryption.KeySize)
	for i := range newKey {
		oldKey[i], newKey[i] = 1, 2
	}
	ctx := context.Background()
	aad := []byte("aad")

	before, _ := encryption.NewManager(encryption.Config{MasterKey: oldKey, Tenant: "acme"})
	sealed, _ := before.Encrypt(ctx, nil, []byte("written before rotation"), aad)

	after, _ := encryption.NewManager(encryption.Config{MasterKey: newKey, PreviousKeys: [][]byte{oldKey}, Tenant: "acme"})
	plain, idx, err := after.DecryptIndex(ctx, nil, sealed, aad)
	fmt.Printf("%s: key %d, %v\n", plain, idx, err)

	_, err = encryption.NewManager(encryption.Config{MasterKey: newKey, PreviousKeys: [][]byte{newKey}})
	fmt.Println(err)
	// Output:
	// written before rotation: key 1, <nil>
	// encryption: invalid PreviousKeys[0]: repeats the current key; a key that has been current may only be retired, never listed beside itself
}

// ParseMasterKeyHex refuses anything but 64 hex digits and never echoes
// the input.
func ExampleParseMasterKeyHex() {
	_, err := encryption.ParseMasterKeyHex("0x007f80ffa55ac33c1ee12dd24bb469968778f00f01102332455467768998ab")
	fmt.Println(err)
	_, err = encryption.ParseMasterKeyHex("007f80ffa55ac33c")
	fmt.Println(err)
	// Output:
	// encryption: invalid MasterKey: must hold only hex digits 0-9, a-f, A-F
	// encryption: invalid MasterKey: must be 64 hex digits (32 bytes), got 16 characters
}
