// Package stat holds the one statistic the bench commands share.
package stat

import (
	"math"
	"slices"
)

// Median returns the median of v (the mean of the middle two for an even
// count) without reordering v. It returns NaN for an empty v.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
