// interpolate (torch.nn.functional.interpolate) and nn::Upsample against PyTorch 1.13's values,
// gradients and refusals; the f64 finite-difference checks are rows of test_gradcheck.cpp.
#include <catch2/catch.hpp>

#include <cmath>

#include "gradcheck.h"
#include "nn/nn.h"

using namespace minidl;
using Catch::Contains;

namespace {
struct InterpolateCase {
  const char* what;
  bool image;  // x [1, 2, 3, 4], else x1 [1, 2, 5]
  InterpolateOptions options;
  Shape shape;
  std::vector<double> y, grad;
};

// Generated from PyTorch 1.13: x = cos(0.7 i) [1, 2, 3, 4], x1 = sin(i) [1, 2, 5]; y = F.interpolate(...),
// g = d sum(y^2) / dx.
const std::vector<InterpolateCase> kCases = {
    {"{'size': (5, 7), 'mode': 'nearest'}", true, InterpolateOptions().size({5, 7}), {1, 2, 5, 7},
     {1, 1, 0.7648421873, 0.7648421873, 0.1699671429, 0.1699671429, -0.5048461046, 1, 1, 0.7648421873, 0.7648421873, 0.1699671429, 0.1699671429, -0.5048461046, -0.9422223407, -0.9422223407, -0.9364566873, -0.9364566873, -0.4902608213, -0.4902608213, 0.1865123694, -0.9422223407, -0.9422223407, -0.9364566873, -0.9364566873, -0.4902608213, -0.4902608213, 0.1865123694, 0.7755658785, 0.7755658785, 0.9998586364, 0.9998586364, 0.7539022543, 0.7539022543, 0.153373862, -0.5192886541, -0.5192886541, -0.9477216021, -0.9477216021, -0.9304262721, -0.9304262721, -0.475536928, -0.5192886541, -0.5192886541, -0.9477216021, -0.9477216021, -0.9304262721, -0.9304262721, -0.475536928, 0.2030048638, 0.2030048638, 0.7860702961, 0.7860702961, 0.9994345855, 0.9994345855, 0.7427491727, 0.2030048638, 0.2030048638, 0.7860702961, 0.7860702961, 0.9994345855, 0.9994345855, 0.7427491727, 0.1367372182, 0.1367372182, -0.5335843866, -0.5335843866, -0.9529529169, -0.9529529169, -0.9241328001},
     {8, 6.118737498, 1.359737143, -2.019384418, -7.537778725, -7.491653498, -3.922086571, 0.7460494777, 3.102263514, 3.999434546, 3.015609017, 0.3067477241, -4.154309233, -7.581772817, -7.443410177, -1.902147712, 1.624038911, 6.288562369, 7.995476684, 2.970996691, 0.5469488728, -2.134337546, -3.811811668, -1.8482656}},
    {"{'scale_factor': 1.5, 'mode': 'nearest'}", true, InterpolateOptions().scale_factor({1.5}), {1, 2, 4, 6},
     {1, 1, 0.7648421873, 0.1699671429, 0.1699671429, -0.5048461046, 1, 1, 0.7648421873, 0.1699671429, 0.1699671429, -0.5048461046, -0.9422223407, -0.9422223407, -0.9364566873, -0.4902608213, -0.4902608213, 0.1865123694, 0.7755658785, 0.7755658785, 0.9998586364, 0.7539022543, 0.7539022543, 0.153373862, -0.5192886541, -0.5192886541, -0.9477216021, -0.9304262721, -0.9304262721, -0.475536928, -0.5192886541, -0.5192886541, -0.9477216021, -0.9304262721, -0.9304262721, -0.475536928, 0.2030048638, 0.2030048638, 0.7860702961, 0.9994345855, 0.9994345855, 0.7427491727, 0.1367372182, 0.1367372182, -0.5335843866, -0.9529529169, -0.9529529169, -0.9241328001},
     {8, 3.059368749, 1.359737143, -2.019384418, -3.768889363, -1.872913375, -1.961043285, 0.3730247388, 3.102263514, 1.999717273, 3.015609017, 0.3067477241, -4.154309233, -3.790886409, -7.443410177, -1.902147712, 0.8120194553, 1.572140592, 3.997738342, 1.485498345, 0.5469488728, -1.067168773, -3.811811668, -1.8482656}},
    {"{'size': (5, 7), 'mode': 'nearest-exact'}", true, InterpolateOptions().size({5, 7}).mode(InterpolateMode::NearestExact), {1, 2, 5, 7},
     {1, 1, 0.7648421873, 0.1699671429, 0.1699671429, -0.5048461046, -0.5048461046, 1, 1, 0.7648421873, 0.1699671429, 0.1699671429, -0.5048461046, -0.5048461046, -0.9422223407, -0.9422223407, -0.9364566873, -0.4902608213, -0.4902608213, 0.1865123694, 0.1865123694, 0.7755658785, 0.7755658785, 0.9998586364, 0.7539022543, 0.7539022543, 0.153373862, 0.153373862, 0.7755658785, 0.7755658785, 0.9998586364, 0.7539022543, 0.7539022543, 0.153373862, 0.153373862, -0.5192886541, -0.5192886541, -0.9477216021, -0.9304262721, -0.9304262721, -0.475536928, -0.475536928, -0.5192886541, -0.5192886541, -0.9477216021, -0.9304262721, -0.9304262721, -0.475536928, -0.475536928, 0.2030048638, 0.2030048638, 0.7860702961, 0.9994345855, 0.9994345855, 0.7427491727, 0.7427491727, 0.1367372182, 0.1367372182, -0.5335843866, -0.9529529169, -0.9529529169, -0.9241328001, -0.9241328001, 0.1367372182, 0.1367372182, -0.5335843866, -0.9529529169, -0.9529529169, -0.9241328001, -0.9241328001},
     {8, 3.059368749, 1.359737143, -4.038768837, -3.768889363, -1.872913375, -1.961043285, 0.7460494777, 6.204527028, 3.999434546, 6.031218035, 1.226990896, -4.154309233, -3.790886409, -7.443410177, -3.804295424, 0.8120194553, 1.572140592, 3.997738342, 2.970996691, 1.093897746, -2.134337546, -7.623623335, -7.393062401}},
    {"{'size': (5, 7), 'mode': 'bilinear'}", true, InterpolateOptions().size({5, 7}).mode(InterpolateMode::Bilinear), {1, 2, 5, 7},
     {1, 0.9160150669, 0.7816391739, 0.4674046651, 0.1217661967, -0.2638413733, -0.5048461046, 0.2231110637, 0.1735437686, 0.09423609647, -0.004900702671, -0.1037082337, -0.1803817606, -0.228302715, -0.9422223407, -0.9401631787, -0.9368685197, -0.7133587543, -0.4419198791, -0.05519234156, 0.1865123694, 0.08845059084, 0.1373369894, 0.2155552272, 0.2407847655, 0.2498364698, 0.1986320361, 0.166629265, 0.7755658785, 0.8556704349, 0.9838377251, 0.8768804454, 0.7110073692, 0.3678482879, 0.153373862, -0.5192886541, -0.6723004213, -0.9171192487, -0.9390739371, -0.8979341761, -0.637997408, -0.475536928, -0.2303712469, -0.2388832455, -0.2525024431, -0.2063433859, -0.1463205404, -0.04902943105, 0.01177751228, 0.2030048638, 0.4112425182, 0.7444227653, 0.8927524408, 0.9810999132, 0.8344225344, 0.7427491727, 0.1632442765, 0.1028989943, 0.006346542928, -0.08886021471, -0.178096637, -0.2268864056, -0.257380011, 0.1367372182, -0.1026633549, -0.485704272, -0.7432686517, -0.9508943371, -0.9344256989, -0.9241328001},
     {3.699083674, 2.749758165, 0.3092762699, -1.75352584, -2.800231053, -2.711495165, -1.365369809, 0.2073290264, 3.022390254, 3.758720496, 2.968059563, 1.255868104, -2.516350523, -3.630054416, -3.370239945, -1.935863998, 0.903393832, 2.229203766, 2.872901079, 2.341564752, 0.3479087151, -1.720766537, -3.525665904, -3.684660213}},
    {"{'size': (5, 7), 'mode': 'bilinear', 'align_corners': True}", true, InterpolateOptions().size({5, 7}).mode(InterpolateMode::Bilinear).align_corners(true), {1, 2, 5, 7},
     {1, 0.8824210936, 0.7648421873, 0.4674046651, 0.1699671429, -0.1674394808, -0.5048461046, 0.02888882967, -0.02845921017, -0.08580725, -0.1229770446, -0.1601468392, -0.1596568534, -0.1591668676, -0.9422223407, -0.939339514, -0.9364566873, -0.7133587543, -0.4902608213, -0.151874226, 0.1865123694, -0.08332823108, -0.02581362827, 0.03170097455, 0.08176084552, 0.1318207165, 0.1508819161, 0.1699431157, 0.7755658785, 0.8877122574, 0.9998586364, 0.8768804454, 0.7539022543, 0.4536380582, 0.153373862, -0.5192886541, -0.7335051281, -0.9477216021, -0.9390739371, -0.9304262721, -0.7029816001, -0.475536928, -0.1581418951, -0.1194837741, -0.080825653, -0.02316074815, 0.0345041567, 0.08405513953, 0.1336061224, 0.2030048638, 0.49453758, 0.7860702961, 0.8927524408, 0.9994345855, 0.8710918791, 0.7427491727, 0.169871041, 0.1480569979, 0.1262429548, 0.07474189454, 0.02324083431, -0.03372548969, -0.09069181368, 0.1367372182, -0.1984235842, -0.5335843866, -0.7432686517, -0.9529529169, -0.9385428585, -0.9241328001},
     {2.897080318, 2.717984756, 0.3384356818, -1.416126984, -2.905360016, -3.627462437, -1.899076314, 0.2275392924, 2.342608969, 3.823984559, 3.08646511, 1.005769856, -1.989966219, -3.720170184, -3.437956729, -1.478421764, 0.9265630654, 3.0449251, 3.87141388, 2.424669358, 0.3189503922, -1.771218608, -3.543968307, -2.894363017}},
    {"{'scale_factor': 1.7, 'mode': 'bilinear'}", true, InterpolateOptions().scale_factor({1.7}).mode(InterpolateMode::Bilinear), {1, 2, 5, 6},
     {1, 0.9100867187, 0.7717585935, 0.4324120154, 0.07072990062, -0.3262190685, 0.2573855756, 0.2026938045, 0.1185526181, 0.004358738857, -0.105712696, -0.1986716358, -0.8850981542, -0.8856029866, -0.8863796518, -0.6541847636, -0.3771628447, -0.002444816171, 0.01771813475, 0.06661485933, 0.1418405894, 0.178798734, 0.1995636933, 0.1777913474, 0.7755658785, 0.8613248742, 0.9932617906, 0.8624124229, 0.6655892555, 0.31233726, -0.5192886541, -0.6831012519, -0.9351206331, -0.9380565648, -0.8635307803, -0.5959488132, -0.2431176031, -0.2590554377, -0.2835751832, -0.2332425059, -0.1656534967, -0.05811429498, 0.1817609368, 0.393322738, 0.7188024321, 0.8510868153, 0.9080038627, 0.7693234254, 0.1659729442, 0.1211012512, 0.05206787742, -0.0297429755, -0.1058905195, -0.1630306402, 0.1367372182, -0.1195622189, -0.5138690453, -0.7679373888, -0.9487146644, -0.9317616545},
     {3.560752947, 2.728357848, 0.2174338035, -0.6619576152, -2.479697183, -2.525289957, -1.162797199, -0.09351110259, 2.743998671, 3.618202799, 2.619157251, 0.833990113, -2.419467341, -3.68279602, -3.106037882, -1.172123254, 0.7645959, 2.084046781, 2.470017798, 1.186469829, 0.3663606631, -1.672965082, -3.13771697, -1.80065407}},
    {"{'scale_factor': 1.7, 'mode': 'bilinear', 'recompute_scale_factor': True}", true, InterpolateOptions().scale_factor({1.7}).mode(InterpolateMode::Bilinear).recompute_scale_factor(true), {1, 2, 5, 6},
     {1, 0.8824210936, 0.6656963466, 0.2691129836, -0.1674394808, -0.5048461046, 0.2231110637, 0.1537168506, 0.05458152408, -0.06438292942, -0.1612133789, -0.228302715, -0.9422223407, -0.939339514, -0.8620907096, -0.564626799, -0.151874226, 0.1865123694, 0.08845059084, 0.1568915489, 0.2304832598, 0.2510862712, 0.2114331445, 0.166629265, 0.7755658785, 0.8877122574, 0.958865906, 0.7948949847, 0.4536380582, 0.153373862, -0.5192886541, -0.7335051281, -0.9448390471, -0.9333088271, -0.7029816001, -0.475536928, -0.2303712469, -0.2422880449, -0.2382510239, -0.174435748, -0.07335220839, 0.01177751228, 0.2030048638, 0.49453758, 0.821631011, 0.9638738706, 0.8710918791, 0.7427491727, 0.1632442765, 0.07876088148, -0.03343508057, -0.1442853489, -0.2146889634, -0.257380011, 0.1367372182, -0.1984235842, -0.6034791416, -0.8830581618, -0.9385428585, -0.9241328001},
     {3.24238448, 2.215554381, 0.3527862888, -1.547822975, -2.450291512, -2.225185968, -1.197717022, 0.1918996591, 2.639119653, 3.125622539, 2.522127811, 1.087200787, -2.19390076, -3.037850816, -2.839539939, -1.683933766, 0.7814348659, 1.896182807, 2.38750332, 2.044891757, 0.3182005129, -1.513610496, -2.891251918, -3.22447785}},
    {"{'size': (2, 3), 'mode': 'bilinear'}", true, InterpolateOptions().size({2, 3}).mode(InterpolateMode::Bilinear), {1, 2, 2, 3},
     {0.4852899238, 0.1722138102, -0.2758537131, 0.374395654, 0.4793206454, 0.208525655, -0.3679750001, -0.4811173426, -0.2171313453, 0.09380832202, -0.3342633786, -0.5003195959},
     {0.6066124048, 0.2504828386, 0.0601969294, -0.3448171414, 0.3582023241, 0.2345240787, 0.1572729424, -0.02805335755, 0.4679945675, 0.4530893976, 0.4116218978, 0.2606570687, -0.4599687502, -0.452831757, -0.4151208433, -0.2714141816, -0.1142361159, -0.2266924035, -0.2636327587, -0.2989378922, 0.1172604025, -0.2272454534, -0.3757774329, -0.6253994949}},
    {"{'size': (1, 1), 'mode': 'bilinear', 'align_corners': True}", true, InterpolateOptions().size({1, 1}).mode(InterpolateMode::Bilinear).align_corners(true), {1, 2, 1, 1},
     {1, -0.5192886541},
     {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1.038577308, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
    {"{'size': (2, 2), 'mode': 'area'}", true, InterpolateOptions().size({2, 2}).mode(InterpolateMode::Area), {1, 2, 2, 2},
     {-0.02845921017, -0.1596568534, -0.02581362827, 0.1508819161, -0.1194837741, 0.08405513953, 0.1480569979, -0.03372548969},
     {-0.01422960508, -0.01422960508, -0.0798284267, -0.0798284267, -0.02713641922, -0.02713641922, -0.004387468644, -0.004387468644, -0.01290681413, -0.01290681413, 0.07544095806, 0.07544095806, -0.05974188704, -0.05974188704, 0.04202756976, 0.04202756976, 0.01428661191, 0.01428661191, 0.02516482492, 0.02516482492, 0.07402849895, 0.07402849895, -0.01686274484, -0.01686274484}},
    {"{'scale_factor': (2.0, 0.5), 'mode': 'bilinear'}", true, InterpolateOptions().scale_factor({2.0, 0.5}).mode(InterpolateMode::Bilinear), {1, 2, 6, 2},
     {0.8824210936, -0.1674394808, 0.4269809417, -0.1635481671, -0.4838993621, -0.1557655397, -0.4825765711, -0.0004961549217, 0.4309493146, 0.3022599872, 0.8877122574, 0.4536380582, -0.7335051281, -0.7029816001, -0.4264944511, -0.3094632303, 0.187526903, 0.4775735093, 0.3212972889, 0.4186831947, -0.02518329315, -0.4861341741, -0.1984235842, -0.9385428585},
     {1.081681959, 1.081681959, -0.3290419911, -0.3290419911, -0.5103743858, -0.5103743858, -0.08251831595, -0.08251831595, 1.090280101, 1.090280101, 0.6802090098, 0.6802090098, -1.006494241, -1.006494241, -0.8156856454, -0.8156856454, 0.2686987079, 0.2686987079, 0.4732931769, 0.4732931769, -0.1369867318, -0.1369867318, -1.19847269, -1.19847269}},
    {"{'size': 8, 'mode': 'linear'}", false, InterpolateOptions().size({8}).mode(InterpolateMode::Linear), {1, 2, 8},
     {0, 0.3681435559, 0.8457101374, 0.8881016637, 0.6692419835, 0.1891310967, -0.3639614001, -0.7568024953, -0.9589242747, -0.661639185, -0.2208903671, 0.3643609434, 0.7608527387, 0.9685850186, 0.6646608808, 0.4121184852},
     {0.4141615003, 2.462895659, 2.270702669, 0.454430821, -1.923061566, -2.662192632, -0.7653781356, 1.640630644, 2.873208142, 1.571980461}},
    {"{'scale_factor': 0.5, 'mode': 'linear', 'align_corners': True}", false, InterpolateOptions().scale_factor({0.5}).mode(InterpolateMode::Linear).align_corners(true), {1, 2, 2},
     {0, -0.7568024953, -0.9589242747, 0.4121184852},
     {0, 0, 0, 0, -1.513604991, -1.917848549, 0, 0, 0, 0.8242369705}},
    {"{'size': 3, 'mode': 'nearest'}", false, InterpolateOptions().size({3}), {1, 2, 3},
     {0, 0.8414709848, 0.1411200081, -0.9589242747, -0.2794154982, 0.9893582466},
     {0, 1.68294197, 0, 0.2822400161, 0, -1.917848549, -0.5588309964, 0, 1.978716493, 0}},
    {"{'size': 3, 'mode': 'area'}", false, InterpolateOptions().size({3}).mode(InterpolateMode::Area), {1, 2, 3},
     {0.4207354924, 0.6306294732, -0.3078412436, -0.6191698864, 0.4556431157, 0.7007383659},
     {0.4207354924, 0.8411551412, 0.4204196488, 0.1125784052, -0.3078412436, -0.6191698864, -0.3154078093, 0.3037620771, 1.004500443, 0.7007383659}},
};

Tensor image() {
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i) v[i] = std::cos(0.7 * i);
  return from_vector<double>(v, {1, 2, 3, 4});
}
Tensor signal() {
  std::vector<double> v(10);
  for (int i = 0; i < 10; ++i) v[i] = std::sin(static_cast<double>(i));
  return from_vector<double>(v, {1, 2, 5});
}
}  // namespace

TEST_CASE("interpolate matches F.interpolate in every mode, values and gradients", "[interpolate][parity]") {
  for (const InterpolateCase& c : kCases) {
    INFO(c.what);
    Tensor x = (c.image ? image() : signal()).requires_grad_(true);
    Tensor y = interpolate(x, c.options);
    REQUIRE(y.shape() == c.shape);
    const std::vector<double> got = y.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(c.y[i]).margin(1e-9));
    sum(y * y).backward();
    const std::vector<double> g = x.grad().to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(c.grad[i]).margin(1e-8));
  }
}

TEST_CASE("interpolate in f32, bf16 and f16 stays within the dtype's rounding of the f64 result", "[interpolate][low_precision]") {
  // Linear modes compute f16/bf16 in f32 and round once: each value is within half an ulp of the
  // f64 result on the same (rounded) input, plus f32's own error, far below. Nearest modes copy.
  for (InterpolateMode mode : {InterpolateMode::Bilinear, InterpolateMode::Nearest, InterpolateMode::NearestExact}) {
    const InterpolateOptions o = InterpolateOptions().size({5, 7}).mode(mode);
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
      INFO(interpolate_mode_name(mode) << " " << dtype_name(dt));
      const Tensor x = image().to(dt);
      Tensor y = interpolate(x, o);
      REQUIRE(y.dtype() == dt);
      const std::vector<double> want = interpolate(x.to(DType::F64), o).to_vector<double>();
      const std::vector<double> got = y.to(DType::F64).to_vector<double>();
      const double half_ulp = traits(dt).eps / 2, f32_error = 4 * traits(DType::F32).eps;
      for (size_t i = 0; i < got.size(); ++i) {
        if (mode == InterpolateMode::Bilinear)
          CHECK(std::fabs(got[i] - want[i]) <= half_ulp * std::fabs(want[i]) + f32_error);
        else
          CHECK(got[i] == want[i]);
      }
    }
  }
}

TEST_CASE("interpolate's index arithmetic is PyTorch's float arithmetic", "[interpolate][parity]") {
  // F.interpolate(arange(7.)[None, None], size=9) and arange(10.) to 3, nearest.
  CHECK(interpolate(arange(0, 7, 1, DType::F32).reshape({1, 1, 7}), InterpolateOptions().size({9})).to_vector<float>() ==
        std::vector<float>{0, 0, 1, 2, 3, 3, 4, 5, 6});
  CHECK(interpolate(arange(0, 10, 1, DType::F32).reshape({1, 1, 10}), InterpolateOptions().size({3})).to_vector<float>() ==
        std::vector<float>{0, 3, 6});
  // Same size: a copy, not a view of the input.
  Tensor x = image();
  Tensor same = interpolate(x, InterpolateOptions().size({3, 4}).mode(InterpolateMode::Bilinear));
  CHECK(same.to_vector<double>() == x.to_vector<double>());
  CHECK(same.impl()->storage != x.impl()->storage);
  // NaN propagates through the blend.
  Tensor n = full({1, 1, 2, 2}, std::nan(""));
  CHECK(std::isnan(interpolate(n, InterpolateOptions().scale_factor({2}).mode(InterpolateMode::Bilinear)).to_vector<float>()[5]));
}

TEST_CASE("interpolate refuses what F.interpolate refuses, naming the problem", "[interpolate][errors]") {
  Tensor x = image(), x1 = signal();
  CHECK_THROWS_WITH(interpolate(x, InterpolateOptions()), Contains("interpolate: either size or scale_factor should be defined"));
  CHECK_THROWS_WITH(interpolate(x, InterpolateOptions().size({2, 2}).scale_factor({2})),
                    Contains("only one of size or scale_factor should be defined"));
  CHECK_THROWS_WITH(interpolate(x, InterpolateOptions().size({2, 2, 2})),
                    Contains("Input and output size must have the same number of spatial dimensions") && Contains("[3, 4]"));
  CHECK_THROWS_WITH(interpolate(x, InterpolateOptions().size({2, 2}).align_corners(true)),
                    Contains("align_corners option can only be set with the interpolating modes"));
  CHECK_THROWS_WITH(interpolate(x, InterpolateOptions().size({4}).mode(InterpolateMode::Linear)),
                    Contains("Got 4D input, but linear mode needs 3D input"));
  CHECK_THROWS_WITH(interpolate(x1, InterpolateOptions().size({4}).mode(InterpolateMode::Bilinear)),
                    Contains("Got 3D input, but bilinear mode needs 4D input"));
  CHECK_THROWS_WITH(interpolate(x, InterpolateOptions().size({0, 3})), Contains("sizes should be greater than 0"));
  CHECK_THROWS_WITH(interpolate(x, InterpolateOptions().scale_factor({0.1})), Contains("sizes should be greater than 0"));
  CHECK_THROWS_WITH(interpolate(ones({4, 4}), InterpolateOptions().size({2})), Contains("1 to 3 spatial dims"));
  CHECK_THROWS_WITH(interpolate(ones({1, 1, 2}, TensorOptions(DType::I64)), InterpolateOptions().size({4})),
                    Contains("interpolate"));
  CHECK_THROWS_WITH(interpolate_mode_from_string("lanczos"), Contains("unsupported mode 'lanczos'"));
  CHECK(interpolate_mode_from_string("nearest-exact") == InterpolateMode::NearestExact);
}

TEST_CASE("Upsample is interpolate as a module, with PyTorch's repr", "[interpolate][nn]") {
  nn::Upsample up(InterpolateOptions().scale_factor({2}));
  CHECK(up.describe() == "Upsample(scale_factor=2.0, mode=nearest)");
  CHECK(nn::Upsample(InterpolateOptions().size({4, 5}).mode(InterpolateMode::Bilinear).align_corners(true)).describe() ==
        "Upsample(size=(4, 5), mode=bilinear)");
  CHECK(nn::Upsample(InterpolateOptions().scale_factor({1.5}).mode(InterpolateMode::Bilinear)).describe() ==
        "Upsample(scale_factor=1.5, mode=bilinear)");
  Tensor x = image();
  CHECK(up(x).to_vector<double>() == interpolate(x, InterpolateOptions().scale_factor({2})).to_vector<double>());
  CHECK(up(x).shape() == Shape{1, 2, 6, 8});
  CHECK_THROWS_WITH(nn::Upsample(InterpolateOptions()), Contains("Upsample") && Contains("exactly one of size and scale_factor"));
  CHECK_THROWS_WITH(nn::Upsample(InterpolateOptions().size({2}).align_corners(false)), Contains("align_corners"));
  CHECK(up.clone_structure()->describe() == up.describe());
}
