#!/bin/bash
#!/bin/bash
#SBATCH -n 2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
